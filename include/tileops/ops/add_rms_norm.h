// add_rms_norm: residual_out = input + residual; out = rms_norm(residual_out, weight, eps).
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input, residual, out, residual_out: [..., D], one dtype in {float32, float16, bfloat16};
// weight: [D], any of those dtypes. residual_out is input + residual rounded to the dtype, and
// out is computed from that rounded sum. Any strides; out may be input and residual_out may be
// residual (same views).
void add_rms_norm(const Tensor& input, const Tensor& residual, const Tensor& weight, double eps,
                  const Tensor& out, const Tensor& residual_out, const Context& ctx = {});

// The in-place form (vLLM fused_add_rms_norm): writes out into input and residual_out into
// residual.
void add_rms_norm_inplace(const Tensor& input, const Tensor& residual, const Tensor& weight,
                          double eps, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class AddRmsNorm {
 public:
  AddRmsNorm(const Tensor& input, const Tensor& residual, const Tensor& weight, double eps,
             const Tensor& out, const Tensor& residual_out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& residual, const Tensor& weight,
                  const Tensor& out, const Tensor& residual_out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
