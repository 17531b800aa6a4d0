// Batched generation with a Model: prefill the prompts, then sample and decode token by token.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "examples/llama/model.h"

namespace tileops::llama {

struct Sampling {
  std::int64_t top_k = 50;  // <= 0: off
  double top_p = 0.9;       // >= 1: off
  std::uint64_t seed = 0;   // the same seed gives the same tokens
};

struct Generation {
  std::vector<std::vector<std::int64_t>> tokens;  // generated tokens per prompt
  std::int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;  // sampling included
};

// Called with each step's tokens (one per prompt) as soon as they are sampled; returning false
// ends the generation there (e.g. at EOS).
using TokenCallback = std::function<bool(const std::vector<std::int64_t>& next)>;
// Called with each step's logits [batch, vocab] before they are sampled (e.g. to record them).
using LogitsCallback = std::function<void(const Tensor& logits)>;

// Prefills `prompts` and generates `new_tokens` tokens per prompt (the first from the prefill
// logits, then one decode step each), fewer when `on_tokens` stops it.
Generation generate(Model& model, const std::vector<std::vector<std::int64_t>>& prompts,
                    std::int64_t new_tokens, const Sampling& sampling,
                    const TokenCallback& on_tokens = {}, const LogitsCallback& on_logits = {});

}  // namespace tileops::llama
