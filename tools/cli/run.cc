// The `tileops` command line, shared by the executable (main.cc) and `python -m tileops`
// (python/src/cli.cc): help, the subcommands, and errors as one line on stderr.
#include <cstdio>
#include <cstring>
#include <exception>

#include "examples/llama/demo.h"
#include "tileops/core/error.h"
#include "tools/cli/commands.h"

namespace tileops::cli {

int run(const char* program, int argc, char** argv) {
  if (argc < 1 || std::strcmp(argv[0], "--help") == 0 || std::strcmp(argv[0], "help") == 0) {
    std::printf(
        "usage: %s <command> [options]\n"
        "commands:\n"
        "  demo [--quick] [--operators-only|--decoder-only] [decoder options]\n"
        "                   run every operator on LLM shapes, check and time each, then\n"
        "                   prefill and decode with a Llama-architecture model\n"
        "  env              show the build, CPU features and registered implementations\n"
        "%s",
        program, tileops::llama::demo_options_help());
    return argc < 1 ? 2 : 0;
  }
  try {
    if (std::strcmp(argv[0], "demo") == 0) return run_demo(argc - 1, argv + 1);
    if (std::strcmp(argv[0], "env") == 0) return run_env(argc - 1, argv + 1);
  } catch (const Error& e) {  // "tileops demo: ..." names the command already
    const bool named = std::strncmp(e.what(), "tileops", 7) == 0;
    std::fprintf(stderr, "%s%s\n", named ? "" : "tileops: ", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tileops: unexpected error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "tileops: unknown command '%s' (try '%s help')\n", argv[0], program);
  return 2;
}

}  // namespace tileops::cli
