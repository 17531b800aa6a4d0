// add: out = input + other, NumPy broadcasting of input and other to out's shape.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input, other, out: one dtype in {float32, float16, bfloat16, int8, int16, int32, int64, uint8};
// out has the broadcast shape of input and other (no broadcasting of out). Any strides; out may
// be input or other (same view). Float math in float32, rounded once to the dtype; integers wrap
// modulo 2^n, as torch's do.
void add(const Tensor& input, const Tensor& other, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class Add {
 public:
  Add(const Tensor& input, const Tensor& other, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& other, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
