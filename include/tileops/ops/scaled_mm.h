// float8 matrix product with scales: vLLM's cutlass_scaled_mm (vllm/_custom_ops.py,
// csrc/quantization/cutlass_w8a8/scaled_mm_entry.cu and c3x/scaled_mm_helper.hpp), the form
// fp8 checkpoints (per-tensor, per-channel weight scales with per-token activation scales, or
// DeepSeek-V3's 128×128 blocks) run their linear layers in. docs/scaled-mm.md.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// The block edge of block-wise scales (vLLM's group shapes [1, 128] for a, [128, 128] for b).
inline constexpr std::int64_t kScaledMmBlock = 128;

// out = (scale_a * a) @ (scale_b * b) + bias, float32 accumulation, rounded once to out's dtype.
// a: [M, K], b: [K, N], both float8_e4m3fn or both float8_e5m2, any strides (vLLM's b is the
// column-major view weight.t() of an [N, K] weight: the fast layout). scale_a and scale_b:
// float32, either
//   per tensor / token / channel, contiguous: scale_a has 1 or M elements, scale_b 1 or N ([1],
//   [M, 1], [1, N], [N, 1]...): out[i, j] = scale_a[i] · scale_b[j] · Σ_p a[i, p] b[p, j];
//   or 128×128 blocks, any strides (vLLM passes the transpose of the weight's [N/128, K/128]
//   scales): scale_a [M, ceil(K/128)], scale_b [ceil(K/128), ceil(N/128)], each K block
//   of 128 (the last may be shorter) scaled by scale_a[i, p/128] · scale_b[p/128, j/128].
// The first form is taken whenever the element counts allow it (vLLM's dispatch). bias: [N] in
// out's dtype, or an undefined Tensor. out: [M, N], float32/float16/bfloat16, any strides, apart
// from the inputs.
void scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
               const Tensor& bias, const Tensor& out, const Context& ctx = {});

class ScaledMm {
 public:
  ScaledMm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
           const Tensor& bias, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                  const Tensor& bias, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
