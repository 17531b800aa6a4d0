// gated_delta_rule: the gated delta rule of Gated DeltaNet (Qwen3-Next's linear attention), the
// contract of flash-linear-attention's fused_recurrent_gated_delta_rule (decode) and
// chunk_gated_delta_rule (prefill) as vLLM calls them (fla/ops/gated_delta_rule/, vLLM's
// model_executor/layers/fla/ops/). Arguments in fla's order; docs/operators/gated_delta_rule.md.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// q, k: [B, T, H, K] and v: [B, T, HV, V], float32/float16/bfloat16 alike (any strides); HV a
// multiple of H (value head j reads q/k head j / (HV / H)). g (log-space decay) and beta:
// [B, T, HV], any float dtype. Per sequence and value head, from S = initial_state[n, hv]
// (float32 [K, V]; zero when undefined), for each token t:
//   (q, k) = l2-normalised if use_qk_l2norm_in_kernel (x / sqrt(sum x^2 + 1e-6)),
//   S *= exp(g_t);  S += k ⊗ beta_t (v_t - Sᵀk);  o_t = scale · Sᵀq,
// then final_state[n, hv] = S (float32 [N, HV, K, V]; it may be initial_state itself). With
// cu_seqlens (int32/int64 [N + 1], from 0, non-decreasing, ending at T) B must be 1 and the
// tokens hold N sequences. scale 0: K^-0.5. chunk_size 0 runs the per-token recurrence, 64 the
// chunked WY form (the same math; results agree up to float32 rounding).
void gated_delta_rule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                      const Tensor& beta, double scale, const Tensor& initial_state,
                      const Tensor& cu_seqlens, bool use_qk_l2norm_in_kernel, int chunk_size,
                      const Tensor& o, const Tensor& final_state, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data (the
// cu_seqlens values are checked on every call).
class GatedDeltaRule {
 public:
  GatedDeltaRule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                 const Tensor& beta, double scale, const Tensor& initial_state,
                 const Tensor& cu_seqlens, bool use_qk_l2norm_in_kernel, int chunk_size,
                 const Tensor& o, const Tensor& final_state, int implementation_index = 0);
  void operator()(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                  const Tensor& beta, const Tensor& initial_state, const Tensor& cu_seqlens,
                  const Tensor& o, const Tensor& final_state, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
