#include <cstdio>
#include <cstring>
#include <exception>

#include "examples/llama/demo.h"
#include "tileops/core/error.h"
#include "tools/cli/commands.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    std::printf(
        "usage: tileops <command> [options]\n"
        "commands:\n"
        "  demo [--quick] [--operators-only|--decoder-only] [decoder options]\n"
        "                   run every operator on LLM shapes, check and time each, then\n"
        "                   prefill and decode with a Llama-architecture model\n"
        "  env              show the build, CPU features and registered implementations\n"
        "%s",
        tileops::llama::demo_options_help());
    return argc < 2 ? 2 : 0;
  }
  try {
    if (std::strcmp(argv[1], "demo") == 0) return tileops::cli::run_demo(argc - 2, argv + 2);
    if (std::strcmp(argv[1], "env") == 0) return tileops::cli::run_env(argc - 2, argv + 2);
  } catch (const tileops::Error& e) {
    std::fprintf(stderr, "tileops: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tileops: unexpected error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "tileops: unknown command '%s' (try 'tileops help')\n", argv[1]);
  return 2;
}
