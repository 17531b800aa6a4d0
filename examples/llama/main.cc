// llama_generate: the decoder demo on its own (`tileops demo` runs it after the operator table).
// Any error, whatever its type, is one line on stderr and exit status 1; a usage error is one
// line and status 2.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "examples/llama/demo.h"
#include "tileops/core/error.h"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "llama_generate: %s\n", tileops::llama::one_line(what).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::printf("usage: llama_generate [options]\noptions:\n%s",
                  tileops::llama::demo_options_help());
      return 0;
    }
    tileops::llama::DemoOptions options;
    const std::vector<std::string> rest = tileops::llama::parse_demo_options(args, options);
    if (!rest.empty()) {
      std::fprintf(stderr, "llama_generate: unknown option '%s' (try --help)\n",
                   tileops::llama::one_line(rest[0]).c_str());
      return 2;
    }
    return tileops::llama::run_decoder_demo(options);
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {  // tileops::Error, std::filesystem_error, ...
    return fail(e.what());
  } catch (...) {
    return fail("unknown error");
  }
}
