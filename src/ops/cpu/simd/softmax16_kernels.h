// SIMD row softmax of contiguous float16/bfloat16 rows, converting in registers.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// One row of softmax_rows_16: y = softmax(scale · x) over its n >= 1 contiguous entries.
struct Row16 {
  const void* x;
  void* y;
  std::int64_t n;
};

// The row softmax (softmax_kernels.h's softmax_row) of each row, float16 or bfloat16 in and out,
// rounded once to nearest even. The rows are pipelined: each row's results are scaled, rounded
// and stored during the next row's exp pass, which also prefetches the row after. The exp is
// Exp2Coarse (relative error 3e-6), so an element may differ by one unit in the last place from
// the float32 row softmax rounded once. A row whose scaled values hold a NaN or +inf, or are all
// -inf, is NaN throughout. Each y may alias its own x (not another row's). scratch: 2 · max n
// floats (n for a single row). stream: results are written with streaming stores
// (src/ops/cpu/streaming.h).
void softmax_rows_16(DataType dtype, const Row16* rows, std::int64_t count, float scale,
                     float* scratch, bool stream);

// softmax_rows_16 of the single row x (n entries) into out.
void softmax_row_16(DataType dtype, const void* x, float scale, std::int64_t n, float* scratch,
                    void* out, bool stream = false);

}  // namespace tileops::ops::cpu
