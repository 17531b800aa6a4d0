// causal_softmax: Softmax over the last dim with a causal mask aligned bottom-right.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input, out: [S, T] or [B, S, T], one dtype in {float32, float16, bfloat16}, T >= S. Row i
// (of S) may see columns j <= T - S + i; masked columns are written as +0 and never read. Any
// strides; out may be input. Float32 math; non-finite visible values as in scaled_softmax.
void causal_softmax(const Tensor& input, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class CausalSoftmax {
 public:
  CausalSoftmax(const Tensor& input, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
