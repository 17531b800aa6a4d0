// The validation shared by the broadcasting arithmetic operators (add, mul).
#pragma once

#include <string_view>

#include "tileops/core/tensor.h"
#include "tileops/ops/problem.h"

namespace tileops::ops {

// input, other, out: one dtype in {float32, float16, bfloat16, int32, int64}; input and other
// broadcast to out's shape. `op` must be a string literal (the Problem keeps the view).
Problem arithmetic_problem(std::string_view op, const Tensor& input, const Tensor& other,
                           const Tensor& out);

// out may be exactly input's or other's view (in place), and overlap neither otherwise. Part of
// arithmetic_problem; class forms call it on every call.
void check_arithmetic_memory(std::string_view op, const Tensor& input, const Tensor& other,
                             const Tensor& out);

}  // namespace tileops::ops
