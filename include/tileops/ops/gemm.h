// gemm: c = alpha·op(a)·op(b) + beta·c, op(x) = x or xᵀ (last two dims), optionally batched.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// a: [M, K] or [B, M, K] ([.., K, M] when trans_a); b: [K, N] or [B, K, N] ([.., N, K] when
// trans_b); c: [M, N] or [B, M, N], 3-D when a or b is (a 2-D operand is shared by every batch,
// a batch of 1 broadcasts). One dtype in {float32, float16, bfloat16}; float32 accumulation; any
// strides; c must not overlap a or b. beta = 0 never reads c. alpha and beta finite.
void gemm(const Tensor& a, const Tensor& b, double alpha, double beta, bool trans_a, bool trans_b,
          const Tensor& c, const Context& ctx = {});

class Gemm {
 public:
  Gemm(const Tensor& a, const Tensor& b, double alpha, double beta, bool trans_a, bool trans_b,
       const Tensor& c, int implementation_index = 0);
  void operator()(const Tensor& a, const Tensor& b, const Tensor& c, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
