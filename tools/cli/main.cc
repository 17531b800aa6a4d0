// The `tileops` executable. `new`, `check`, `verify` and `catalog` read and run Python: they are
// the Python package's (tileops.cli), so this process becomes `python -m tileops <command> ...`
// (argv, never a shell) with the interpreter the build was configured with ($TILEOPS_PYTHON
// overrides it).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tileops/runtime/knobs.h"
#include "tools/cli/commands.h"

namespace {

bool is_python_command(const char* command) {
  return std::strcmp(command, "new") == 0 || std::strcmp(command, "check") == 0 ||
         std::strcmp(command, "verify") == 0 || std::strcmp(command, "catalog") == 0;
}

int exec_python(int argc, char** argv) {
  std::string python = "python3";
#ifdef TILEOPS_PYTHON_EXECUTABLE
  python = TILEOPS_PYTHON_EXECUTABLE;
#endif
  if (const std::optional<std::string> env = tileops::knob("TILEOPS_PYTHON");
      env && !env->empty()) {
    python = *env;
  }
#ifdef TILEOPS_PYTHON_PACKAGE_DIR
  // The source tree's package (the Release build writes the extension into it) comes first.
  const std::string path = tileops::knob("PYTHONPATH").value_or("");
  const std::string joined =
      std::string(TILEOPS_PYTHON_PACKAGE_DIR) + (path.empty() ? "" : ":" + path);
  ::setenv("PYTHONPATH", joined.c_str(), 1);
#endif
  std::string module_flag = "-m", module = "tileops";
  std::vector<char*> args = {python.data(), module_flag.data(), module.data()};
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(python.c_str(), args.data());
  std::fprintf(stderr,
               "tileops %s: cannot run the Python '%s' (%s); set TILEOPS_PYTHON to a Python 3 "
               "with numpy and pytest (apt-get install python3-numpy python3-pytest)\n",
               argv[0], python.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && is_python_command(argv[1])) return exec_python(argc - 1, argv + 1);
  return tileops::cli::run("tileops", argc - 1, argv + 1);
}
