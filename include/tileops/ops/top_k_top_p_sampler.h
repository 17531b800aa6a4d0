// top_k_top_p_sampler: one token per row of logits, drawn from softmax(logits) restricted to
// the top k tokens and then to the top-p nucleus (vLLM / FlashInfer semantics), seeded.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// logits: [B, V], float32/float16/bfloat16, V >= 1; out: int64 or int32 [B]. k: undefined (off) or
// an int32/int64 tensor of B elements or 1 (every row); a row's k <= 0 or >= V is off. p: undefined
// (off) or a float32/float64 tensor of B elements or 1; a row's p >= 1 is off, and p must be > 0
// (else kInvalidArgument naming p, nothing written). Per row: probabilities softmax(logits)
// (float32 exp, float64 sums); the top k by probability (ties: lower index first); then the
// shortest prefix of those, by decreasing probability, whose mass is >= p times their mass (the
// boundary token included); one draw from that set renormalised. A row with a NaN or +inf logit, or
// of only -inf, is kInvalidArgument naming logits and the row (nothing written); -inf logits are
// otherwise never drawn. Deterministic: the draw of row b uses u_b = splitmix64(seed ^
// splitmix64(b)) (see docs/decisions.md), so results do not depend on the thread count; change the
// seed for each step to get fresh draws.
void top_k_top_p_sampler(const Tensor& logits, const Tensor& k, const Tensor& p, std::uint64_t seed,
                         const Tensor& out, const Context& ctx = {});

// Scalar k and p for every row: k <= 0 or k >= V: off; p >= 1: off.
void top_k_top_p_sampler(const Tensor& logits, std::int64_t k, double p, std::uint64_t seed,
                         const Tensor& out, const Context& ctx = {});

// Class form of the tensor form.
class TopKTopPSampler {
 public:
  TopKTopPSampler(const Tensor& logits, const Tensor& k, const Tensor& p, const Tensor& out,
                  int implementation_index = 0);
  void operator()(const Tensor& logits, const Tensor& k, const Tensor& p, std::uint64_t seed,
                  const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
