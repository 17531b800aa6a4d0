// The decoder part of `tileops demo` (and of the llama_generate example): prefill a batch of
// prompts, decode tokens, print tokens/s and the time per operator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "examples/llama/communicator.h"
#include "examples/llama/config.h"
#include "examples/llama/generate.h"
#include "examples/llama/quantize.h"
#include "examples/llama/tp_options.h"

namespace tileops::llama {

struct DemoOptions {
  Config config;
  std::string weights;  // .safetensors file or directory; empty = synthetic weights from seed
  // When set: model.safetensors and config.json of the weights used, then generation.json
  // (prompts, tokens, timings) are written there, for a peer implementation to replay.
  std::string export_dir;
  std::int64_t prompts = 4;
  std::int64_t prompt_tokens = 128;
  std::int64_t new_tokens = 32;
  std::int64_t block_size = 16;
  Sampling sampling;
  bool sizes_given = false;  // a size option (--layers ... --vocab) was given
  bool pack_weights = true;  // --no-pack: linear over the [N, K] weights (Model's pack_weights)
  // --quantize int8|int4 and --quant-group N: the projections quantized at load.
  WeightQuantization quantization;
  // --prompt TEXT: one prompt, encoded with the tokenizer next to --weights; the generated text
  // is printed to stdout as it comes (the report goes to stderr then).
  std::optional<std::string> prompt;
  // llama_generate only (tp_options.h): tensor parallelism and the logits dump.
  TensorParallelOptions parallel;
};

// Consumes the decoder options in args ("--layers 2", ...) and returns the others; throws
// kInvalidArgument for a bad value.
std::vector<std::string> parse_demo_options(const std::vector<std::string>& args,
                                            DemoOptions& options);
// Help text for the options above.
const char* demo_options_help();

// `message` with its line breaks replaced by spaces: a CLI's error is one line on stderr.
std::string one_line(std::string_view message);

// Checks every option and size (against int64, the model's limits and this machine's memory),
// then builds the model, generates and prints the report (with --prompt: the prompt and the
// generated text on stdout, the report on stderr). Returns 0; throws on an error.
// With `tensor_parallel` of several ranks (options.parallel.ranks of them): each rank loads its
// shard and builds its part of the model, then they agree (a failure anywhere: CollectiveError
// on every rank, naming the failing ranks); rank 0 alone prints. Collectives past the agreement
// time out (the communicator's timeout) instead of waiting for a dead rank.
int run_decoder_demo(const DemoOptions& options, Communicator* tensor_parallel = nullptr);

}  // namespace tileops::llama
