#include "examples/llama/text_generation.h"

#include <algorithm>

#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

void write(std::FILE* out, const std::string& text) {
  if (text.empty()) return;
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) {
    throw Error(ErrorKind::kInvalidArgument, "cannot write the generated text");
  }
}

}  // namespace

std::vector<std::int64_t> encode_prompt(const Tokenizer& tokenizer, std::string_view text) {
  std::vector<std::int64_t> ids;
  if (tokenizer.add_bos && tokenizer.bos) ids.push_back(*tokenizer.bos);
  const std::vector<std::int64_t> body = tokenizer.encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  if (ids.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "--prompt: the prompt encodes to no token (and the tokenizer adds no BOS)");
  }
  return ids;
}

Generation generate_text(Model& model, const Tokenizer& tokenizer,
                         const std::vector<std::int64_t>& prompt, std::int64_t new_tokens,
                         const Sampling& sampling, std::FILE* out) {
  TextStream stream(tokenizer, prompt);
  const auto on_token = [&](const std::vector<std::int64_t>& next) {
    write(out, stream.push(next[0]));
    return std::find(tokenizer.eos.begin(), tokenizer.eos.end(), next[0]) == tokenizer.eos.end();
  };
  Generation g = generate(model, {prompt}, new_tokens, sampling, on_token);
  write(out, stream.finish());
  return g;
}

}  // namespace tileops::llama
