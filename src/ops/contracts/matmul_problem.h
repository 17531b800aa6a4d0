// Shape rules shared by the matrix-product contracts (gemm, matmul): op(a)·op(b) over the last
// two dims with NumPy-broadcast batch dims.
#pragma once

#include "src/ops/framework/arg_check.h"
#include "tileops/core/tensor.h"

namespace tileops::ops {

// The shape of op(a)·op(b), [broadcast batch..., M, N], for a and b of rank >= 2; a K or batch
// mismatch is an error naming b.
Dims product_shape(const ArgCheck& check, const Tensor& a, bool trans_a, const Tensor& b,
                   bool trans_b);

// The output shape hook's form (Python allocates c from it): a or b of rank < 2 is named.
Dims product_output_shape(std::string_view op, const Tensor& a, bool trans_a, const Tensor& b,
                          bool trans_b);

}  // namespace tileops::ops
