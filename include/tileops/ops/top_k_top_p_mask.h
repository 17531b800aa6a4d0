// top_k_top_p_mask: vLLM's apply_top_k_top_p (vllm/v1/sample/ops/topk_topp_sampler.py), the
// masking of logits that precedes sampling, in place.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// logits: [B, V] float32/float16/bfloat16 (any strides), 1 <= V < 2^31, finite or -inf. k:
// undefined (no top-k mask) or int32/int64 with B elements or 1 (every row), each in [1, V]; p:
// undefined (no top-p mask) or float32/float64 with B elements or 1, each in (0, 1]. Per row:
//  1. top-k: every logit below the k-th largest becomes -inf (ties at the k-th value are kept,
//     so more than k may survive; k = V masks nothing);
//  2. top-p, over the softmax of what step 1 left: walking the tokens by decreasing logit (equal
//     logits: higher index first, as vLLM's ascending stable sort leaves them), a token is kept
//     while the probability mass of the tokens before it is < p, so the first is always kept and
//     p = 1 masks nothing. vLLM masks where the ascending cumulative sum is <= 1 - p: the same set
//     up to rounding (our mass: float32 exp, float64 sums).
// A row of only -inf is left as it is. A NaN or +inf logit, or a k or p out of range, is
// kInvalidArgument naming the argument and the row, and nothing is written.
void top_k_top_p_mask(const Tensor& logits, const Tensor& k, const Tensor& p,
                      const Context& ctx = {});

// Class form: validated and specialised once for a geometry; each call checks k and p again.
class TopKTopPMask {
 public:
  TopKTopPMask(const Tensor& logits, const Tensor& k, const Tensor& p,
               int implementation_index = 0);
  void operator()(const Tensor& logits, const Tensor& k, const Tensor& p,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
