#include "examples/llama/generate.h"

#include <chrono>

#include "tileops/ops/top_k_top_p_sampler.h"

namespace tileops::llama {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Generation generate(Model& model, const std::vector<std::vector<std::int64_t>>& prompts,
                    std::int64_t new_tokens, const Sampling& sampling,
                    const TokenCallback& on_tokens, const LogitsCallback& on_logits) {
  const auto batch = static_cast<std::int64_t>(prompts.size());
  Generation result;
  result.tokens.assign(batch, {});
  std::vector<std::int64_t> next(batch);
  const Tensor next_view(next.data(), {batch}, DataType::kInt64);
  auto sample = [&](const Tensor& logits, std::int64_t step) {
    if (on_logits) on_logits(logits);
    const auto start = Clock::now();
    ops::top_k_top_p_sampler(logits, sampling.top_k, sampling.top_p,
                             sampling.seed + static_cast<std::uint64_t>(step), next_view);
    model.profile().add("top_k_top_p_sampler", seconds_since(start));
    for (std::int64_t b = 0; b < batch; ++b) result.tokens[b].push_back(next[b]);
    return !on_tokens || on_tokens(next);
  };
  if (new_tokens <= 0) return result;

  auto start = Clock::now();
  bool go_on = sample(model.prefill(prompts), 0);
  result.prefill_seconds = seconds_since(start);
  for (const auto& p : prompts) result.prefill_tokens += static_cast<std::int64_t>(p.size());

  start = Clock::now();
  std::int64_t steps = 1;
  for (; go_on && steps < new_tokens; ++steps) go_on = sample(model.decode(next), steps);
  result.decode_seconds = seconds_since(start);
  result.decode_tokens = batch * (steps - 1);
  return result;
}

}  // namespace tileops::llama
