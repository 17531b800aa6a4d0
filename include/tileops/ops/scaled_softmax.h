// scaled_softmax: out = softmax(scale · input) over the last dim.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input, out: [..., T], same shape, one dtype in {float32, float16, bfloat16}; scale finite
// (as a float32). Any strides; out may be input. Float32 math, stable (the row max is
// subtracted). Non-finite rows as torch.softmax: -inf entries give 0; a row whose scaled values
// hold a NaN or +inf, or are all -inf, is NaN throughout.
void scaled_softmax(const Tensor& input, double scale, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class ScaledSoftmax {
 public:
  ScaledSoftmax(const Tensor& input, double scale, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
