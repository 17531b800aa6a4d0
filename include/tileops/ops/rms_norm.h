// rms_norm: out = input / sqrt(mean(input², last dim) + eps) · weight.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input, out: [..., D] of one dtype in {float32, float16, bfloat16}; weight: [D], any of those
// dtypes; eps >= 0. Any strides; out may be input itself (in place). Float32 accumulation.
void rms_norm(const Tensor& input, const Tensor& weight, double eps, const Tensor& out,
              const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class RmsNorm {
 public:
  RmsNorm(const Tensor& input, const Tensor& weight, double eps, const Tensor& out,
          int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& weight, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
