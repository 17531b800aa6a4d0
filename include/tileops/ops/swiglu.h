// swiglu: out = input · silu(gate), silu(x) = x / (1 + exp(-x)).
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input, gate, out: same shape and one dtype in {float32, float16, bfloat16}; any strides;
// out may be input or gate (same view). Float32 math. NaN propagates; silu(+inf) = +inf and
// silu(-inf) = 0, its limit (torch's x / (1 + e^-x) gives NaN there).
void swiglu(const Tensor& input, const Tensor& gate, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class Swiglu {
 public:
  Swiglu(const Tensor& input, const Tensor& gate, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& gate, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
