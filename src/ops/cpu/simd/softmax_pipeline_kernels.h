// SIMD row softmax of runs of contiguous rows (float32, float16, bfloat16), pipelined.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// One row of softmax_rows_pipelined: y = softmax(scale · x) over its n >= 1 contiguous entries.
struct PipelinedRow {
  const void* x;
  void* y;
  std::int64_t n;
};

// The row softmax (softmax_kernels.h's softmax_row) of each row, float32, float16 or bfloat16 in
// and out (16-bit values converted in registers, rounded once to nearest even). The rows are
// pipelined: each row's results are scaled, rounded and stored during the next row's exp pass,
// which also prefetches the row after, so the stores drain while the exp computes. The exp is in
// log2 units: for 16-bit rows Exp2Coarse (relative error 3e-6), so an element may differ by one
// unit in the last place from the float32 row softmax rounded once; for float32 rows Exp2Fine
// (relative error 1e-7). A row whose scaled values hold a NaN or +inf, or are all -inf, is NaN
// throughout. Each y may alias its own x (not another row's). scratch: 2 · max n floats (n for a
// single row). stream: results are written with streaming stores (src/ops/cpu/streaming.h).
void softmax_rows_pipelined(DataType dtype, const PipelinedRow* rows, std::int64_t count,
                            float scale, float* scratch, bool stream);

// softmax_rows_pipelined of the single row x (n entries) into out.
void softmax_row_pipelined(DataType dtype, const void* x, float scale, std::int64_t n,
                           float* scratch, void* out, bool stream = false);

}  // namespace tileops::ops::cpu
