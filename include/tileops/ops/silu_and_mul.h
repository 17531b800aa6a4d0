// silu_and_mul (vLLM): out = silu(x[..., :d]) · x[..., d:], split along `dim`.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input: [..., 2d, ...] with an even extent along `dim` (default last, negative allowed); out:
// input's shape with d along `dim`; one dtype in {float32, float16, bfloat16}. Any strides.
// NaN propagates; silu(+inf) = +inf and silu(-inf) = 0, its limit (torch gives NaN there).
void silu_and_mul(const Tensor& input, int dim, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class SiluAndMul {
 public:
  SiluAndMul(const Tensor& input, int dim, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
