// topk_topp_sampling: one token per row of probabilities, restricted to the top k and the top-p
// nucleus, seeded (the probability-input form of top_k_top_p_sampler).
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// probs: [B, V] float32/float16/bfloat16, non-negative (a negative or NaN entry, or a row
// summing to 0 or +inf, is kInvalidArgument naming probs and the row, nothing written); rows
// need not sum to exactly 1 (each is taken relative to its sum). topk <= 0 or >= V: off;
// topp >= 1: off; topp must be > 0. out: int32 or int64 [B]. Selection, tie order and the seeded
// draw are those of top_k_top_p_sampler, so both give the same token for probs = softmax(logits) up
// to rounding.
void topk_topp_sampling(const Tensor& probs, std::int64_t topk, double topp, std::uint64_t seed,
                        const Tensor& out, const Context& ctx = {});

// Class form: topk and topp fixed at construction, the seed given per call.
class TopkToppSampling {
 public:
  TopkToppSampling(const Tensor& probs, std::int64_t topk, double topp, const Tensor& out,
                   int implementation_index = 0);
  void operator()(const Tensor& probs, std::uint64_t seed, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
  std::int64_t topk_;
  double topp_;
};

}  // namespace tileops::ops
