// llama_generate: the decoder demo on its own (`tileops demo` runs it after the operator table).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "examples/llama/demo.h"
#include "tileops/core/error.h"

int main(int argc, char** argv) {
  try {
    tileops::llama::DemoOptions options;
    const std::vector<std::string> rest =
        tileops::llama::parse_demo_options({argv + 1, argv + argc}, options);
    if (!rest.empty()) {
      std::fprintf(stderr, "llama_generate: unknown option '%s'\noptions:\n%s", rest[0].c_str(),
                   tileops::llama::demo_options_help());
      return 2;
    }
    return tileops::llama::run_decoder_demo(options);
  } catch (const tileops::Error& e) {
    std::fprintf(stderr, "llama_generate: %s\n", e.what());
    return 1;
  }
}
