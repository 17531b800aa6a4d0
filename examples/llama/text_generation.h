// Text in, text out: a prompt encoded with the checkpoint's tokenizer, and the generated tokens
// printed as text while they are sampled.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "examples/llama/generate.h"
#include "examples/llama/tokenizer.h"

namespace tileops::llama {

// The prompt's ids: BOS first when the tokenizer adds one. An empty result is an error.
std::vector<std::int64_t> encode_prompt(const Tokenizer& tokenizer, std::string_view text);

// Generates up to `new_tokens` tokens after `prompt` (one sequence) and writes their text to
// `out` as it comes, flushed after each token (TextStream: a character split over tokens is
// written whole); stops after a token of tokenizer.eos.
Generation generate_text(Model& model, const Tokenizer& tokenizer,
                         const std::vector<std::int64_t>& prompt, std::int64_t new_tokens,
                         const Sampling& sampling, std::FILE* out);

}  // namespace tileops::llama
