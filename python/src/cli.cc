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
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  argv.reserve(copy.size() + 1);
  for (std::string& arg : copy) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int rc = 2;
  {
    py::gil_scoped_release release;
    rc = cli::run("python -m tileops", static_cast<int>(copy.size()), argv.data());
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
