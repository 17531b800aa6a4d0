// Runs an elementwise float operation out = op(a, b) over an ElementwiseLoop for float32,
// float16 and bfloat16 operands. Blocks whose three operands are contiguous go straight to the
// SIMD kernel (conversions in registers); other blocks are gathered into float32 scratch (stride
// 0 = one value repeated), computed, and scattered with one rounding.
#pragma once

#include "src/ops/cpu/elementwise_loop.h"
#include "src/ops/cpu/simd/elementwise_kernels.h"
#include "tileops/core/data_type.h"
#include "tileops/core/tensor.h"
#include "tileops/runtime/context.h"

namespace tileops::ops::cpu {

// a, b: the element at offset 0 of each input; a, b and out all of `dtype`. A large contiguous
// out is written with streaming stores (src/ops/cpu/streaming.h).
void run_float_elementwise(const ElementwiseLoop& loop, ElementwiseOp op, DataType dtype,
                           const void* a, const void* b, const Tensor& out, const Context& ctx);

}  // namespace tileops::ops::cpu
