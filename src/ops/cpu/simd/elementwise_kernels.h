// SIMD kernels of the elementwise operators on contiguous rows. Float math is float32 whatever
// the storage dtype; float16/bfloat16 rows are converted in registers (no float32 round trip
// through memory) and rounded once, to nearest even. out may alias an input exactly (same
// pointer); partial overlap is not allowed.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

enum class ElementwiseOp {
  kAdd,  // a + b
  kMul,  // a · b
  // a · silu(b), silu(g) = g / (1 + exp(-g)) within 1e-6 relative error; exactly 0 below
  // g = -87.3, where |silu(g)| < 1e-35; never NaN for a finite g.
  kSwiglu,
  // kSwiglu where a and b are the two halves of each row (silu_and_mul): two streams a few KiB
  // apart read slower than one, so bfloat16 blocks prefetch the next row's block
  // (next_row_bytes ahead) in memory order meanwhile.
  kSwigluOfHalves,
};

// out[i] = op(a[i], b[i]) for i in [0, n); a, b, out: contiguous, all of `dtype` (float32,
// float16 or bfloat16). stream: write out with streaming stores (src/ops/cpu/streaming.h).
// next_row_bytes (kSwigluOfHalves only, 0: none): the distance from a and b to the same block of
// the next row, which is prefetched; it is never dereferenced, so it may lie past the tensor.
void elementwise_rows(ElementwiseOp op, DataType dtype, const void* a, const void* b,
                      std::int64_t n, void* out, bool stream = false,
                      std::int64_t next_row_bytes = 0);

// out[i] = silu(x[i]) on float32.
void silu_f32(const float* x, std::int64_t n, float* out);

}  // namespace tileops::ops::cpu
