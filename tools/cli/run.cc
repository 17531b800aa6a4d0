// The `tileops` command line, shared by the executable (main.cc) and `python -m tileops`
// (python/src/cli.cc): help, the C++ subcommands (new, check, verify and catalog are
// tileops.cli's, in Python), and errors as one line on stderr: any exception
// (tileops::Error, std::bad_alloc, std::filesystem_error, ...) is status 1, a usage error 2.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "examples/llama/demo.h"
#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"
#include "tools/cli/commands.h"

namespace tileops::cli {

int run(const char* program, int argc, char** argv) {
  if (argc >= 1 && std::strcmp(argv[0], "--version") == 0) {
    std::printf("tileops %s\n", version());
    return 0;
  }
  if (argc < 1 || std::strcmp(argv[0], "--help") == 0 || std::strcmp(argv[0], "help") == 0) {
    std::printf(
        "usage: %s <command> [options] | --version\n"
        "commands:\n"
        "  demo [--quick] [--operators-only|--decoder-only] [decoder options]\n"
        "                   run every operator on LLM shapes, check and time each, then\n"
        "                   prefill and decode with a Llama-architecture model\n"
        "  env [--json] [-o FILE]\n"
        "                   the build, CPU features, registered implementations and what a\n"
        "                   kernel author needs (compiler, JIT cache, Python, backends);\n"
        "                   status 1 names what is missing and its fix\n"
        "  new NAME         scaffold NAME/ with kernel.py, test_NAME.py and README.md\n"
        "  check [--json] FILE...\n"
        "                   static checks of tile-language kernel files (nothing runs)\n"
        "  verify FILE      check, then FILE's tests on interp and cpu; writes\n"
        "                   verification.md and verification.json next to FILE\n"
        "  catalog list|search QUERY|show NAME|verify NAME|bench NAME|index [--check]\n"
        "                   the kernel catalog (catalog/): find, read, test and time its\n"
        "                   reference kernels\n"
        "%s",
        program, tileops::llama::demo_options_help());
    return argc < 1 ? 2 : 0;
  }
  try {
    if (std::strcmp(argv[0], "demo") == 0) return run_demo(argc - 1, argv + 1);
    if (std::strcmp(argv[0], "env") == 0) return run_env(argc - 1, argv + 1);
    for (const char* python_side : {"new", "check", "verify", "catalog"}) {
      if (std::strcmp(argv[0], python_side) == 0) {
        std::fprintf(stderr, "tileops: '%s' is a Python command: run python -m tileops %s\n",
                     python_side, python_side);
        return 2;
      }
    }
  } catch (const Error& e) {  // "tileops demo: ..." names the command already
    const bool named = std::strncmp(e.what(), "tileops", 7) == 0;
    std::fprintf(stderr, "%s%s\n", named ? "" : "tileops: ", llama::one_line(e.what()).c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tileops: out of memory\n");
    return 1;
  } catch (const std::exception& e) {  // std::filesystem_error, ...
    std::fprintf(stderr, "tileops: %s\n", llama::one_line(e.what()).c_str());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "tileops: unknown error\n");
    return 1;
  }
  std::fprintf(stderr, "tileops: unknown command '%s' (try '%s help')\n",
               llama::one_line(argv[0]).c_str(), program);
  return 2;
}

}  // namespace tileops::cli
