// mul: out = input · other, NumPy broadcasting of input and other to out's shape.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// Same contract as add.
void mul(const Tensor& input, const Tensor& other, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class Mul {
 public:
  Mul(const Tensor& input, const Tensor& other, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& other, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
