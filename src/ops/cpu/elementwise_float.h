// Runs an elementwise float operation out = op(a, b) over an ElementwiseLoop for float32,
// float16 and bfloat16 operands. Blocks whose three operands are contiguous go straight to the
// SIMD kernel (conversions in registers); other blocks are gathered into float32 scratch (stride
// 0 = one value repeated), computed, and scattered with one rounding.
#pragma once

#include <cstdint>
#include <functional>

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

// result[0, n) = f(x, y) on float32 blocks; y is null when b is.
using FloatBlockFn =
    std::function<void(const float* x, const float* y, std::int64_t n, float* result)>;

// The staged path on its own, for operations without a SIMD kernel of their own: every block of
// a (and of b unless b is null) as float32 (in place when contiguous float32), `compute`, and one
// rounding into out (straight into it when contiguous float32).
void run_staged_float(const ElementwiseLoop& loop, DataType dtype, const void* a, const void* b,
                      const Tensor& out, const Context& ctx, const FloatBlockFn& compute);

}  // namespace tileops::ops::cpu
