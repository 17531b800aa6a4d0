// Shape checks shared by the matrix-product contracts (gemm, matmul, linear): op(a)·op(b) over
// the last two dims with NumPy-broadcast batch dims, one float dtype throughout.
#pragma once

#include <string_view>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/tensor.h"

namespace tileops::ops {

// a: [..., M, K] ([..., K, M] when trans_a), b: [..., K, N] ([..., N, K] when trans_b), both of
// rank >= 2 and one dtype in {float32, float16, bfloat16}; c: [broadcast batch..., M, N] of the
// same dtype, writable. Errors name a_arg, b_arg or c_arg.
void check_matrix_product(const ArgCheck& check, const Tensor& a, std::string_view a_arg,
                          bool trans_a, const Tensor& b, std::string_view b_arg, bool trans_b,
                          const Tensor& c, std::string_view c_arg);

// c must not overlap a or b (a product cannot run in place). Part of check_matrix_product;
// class forms call it on every call, as data pointers are not part of the cached geometry.
void check_product_memory(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& c);

}  // namespace tileops::ops
