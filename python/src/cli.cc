// `python -m tileops <command>`: the C++ CLI's subcommands, linked into the extension.
#include "python/src/cli.h"

#include <pybind11/stl.h>
#include <cstdio>

#include <string>
#include <vector>

#include "tools/cli/commands.h"

namespace tileops::python {
namespace {

int run_cli(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "help") {
    std::printf(
        "usage: python -m tileops <command> [options]\n"
        "commands:\n"
        "  demo [--quick]   run every operator on LLM shapes, check and time each\n"
        "  env              show the build, CPU features and registered implementations\n");
    std::fflush(stdout);
    return args.empty() ? 2 : 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  std::vector<char*> argv;
  argv.reserve(rest.size() + 1);
  for (std::string& arg : rest) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(rest.size());
  int rc = 2;
  {
    py::gil_scoped_release release;
    if (args[0] == "demo") {
      rc = cli::run_demo(argc, argv.data());
    } else if (args[0] == "env") {
      rc = cli::run_env(argc, argv.data());
    } else {
      std::fprintf(stderr, "tileops: unknown command '%s' (try 'python -m tileops help')\n",
                   args[0].c_str());
    }
    std::fflush(stdout);
    std::fflush(stderr);
  }
  return rc;
}

}  // namespace

void bind_cli(py::module_& m) {
  m.def("run_cli", &run_cli, "Runs a `tileops` CLI command; returns its exit status.",
        py::arg("args"));
}

}  // namespace tileops::python
