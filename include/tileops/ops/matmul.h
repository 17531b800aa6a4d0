// matmul: c = op(a)·op(b) over the last two dims, batch dims broadcast NumPy-style.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// a: [..., M, K] ([..., K, M] when trans_a); b: [..., K, N] ([..., N, K] when trans_b), both rank
// >= 2; c: [broadcast(batch dims of a, b)..., M, N]. One dtype in {float32, float16, bfloat16};
// float32 accumulation; any strides; c must not overlap a or b.
void matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a = false,
            bool trans_b = false, const Context& ctx = {});

class Matmul {
 public:
  Matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a = false,
         bool trans_b = false, int implementation_index = 0);
  void operator()(const Tensor& a, const Tensor& b, const Tensor& c, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
