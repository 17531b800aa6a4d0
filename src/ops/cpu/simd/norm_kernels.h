// SIMD row kernels of the normalisation operators. The float32 ones work on float32 scratch
// rows; the fused ones read and write contiguous rows of float32, float16 or bfloat16 directly,
// so that a row costs two passes and no scratch.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// Σ x[i]² in float32 (several accumulators; order differs from a serial sum).
float sum_of_squares(const float* x, std::int64_t n);

// out[i] = a[i] + b[i]; out may alias a or b.
void add_rows(const float* a, const float* b, std::int64_t n, float* out);

// out[i] = x[i] · scale · w[i]; out may alias x.
void scale_by_weight(const float* x, const float* w, float scale, std::int64_t n, float* out);

// Σ x[i]² in float32 of a contiguous row x of dtype (float32, float16 or bfloat16).
float row_sum_of_squares(const void* x, DataType dtype, std::int64_t n);

// sum[i] = round(a[i] + b[i]) for contiguous rows of dtype, added in float32 and rounded to
// nearest even; returns Σ sum[i]² of the rounded values. sum may alias a or b.
float add_rows_sum_of_squares(const void* a, const void* b, DataType dtype, std::int64_t n,
                              void* sum);

// The float32 weight w[0, n) rearranged into out (not aliasing w) as scale_row_by_weight reads it
// for rows of dtype: bfloat16 rows are read as split pairs of elements, whose weights are then
// grouped per block of two vectors (even-indexed first), which saves the lane shuffles of
// widening; the other dtypes take w as it is.
void arrange_row_weight(DataType dtype, const float* w, std::int64_t n, float* out);

// out[i] = round(x[i] · scale · w[i]) for contiguous rows x and out of dtype and a float32
// weight w as arrange_row_weight laid it out for dtype; out may alias x. stream: write out with
// streaming stores (src/ops/cpu/streaming.h). Meanwhile pulls up to `next_bytes` bytes at `next`
// into the L2 cache (nullptr: none): the caller's next row, whose memory read then overlaps this
// pass over a cached row.
void scale_row_by_weight(const void* x, const float* w, float scale, DataType dtype, std::int64_t n,
                         void* out, bool stream = false, const void* next = nullptr,
                         std::int64_t next_bytes = 0);

}  // namespace tileops::ops::cpu
