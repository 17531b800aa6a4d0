// SIMD kernels of CPU decode attention (src/ops/cpu/attention/paged_attention.cc): the scores of
// the query heads that share one kv head against a run of cached key rows, and the accumulation
// of the value rows weighted by their probabilities. Key/value rows are float32, float16 or
// bfloat16, read straight from the cache; each row is loaded (and widened) once for all the
// query heads of the group, which is what makes grouped-query attention cheap per cached byte.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// Cached rows the kernels read: row i (< n) starts `offset` bytes after first[i]. A chunk of keys
// may span several cache blocks; `first` holds the chunk's rows of kv head 0 and `offset` selects
// the kv head.
struct CacheRows {
  const char* const* first = nullptr;
  std::int64_t offset = 0, n = 0;
  const void* row(std::int64_t i) const { return first[i] + offset; }
};

// The cached rows the next decode step will read (`bytes` of each; n = 0: nothing). The kernels
// prefetch them spread over their own work, so that the memory system works on the next step
// while this one computes.
struct PrefetchRows {
  CacheRows rows;
  std::int64_t bytes = 0;
  // Only lines [line0, line1) of the rows' lines taken in order (ceil(bytes / 64) per row);
  // line1 < 0: to the end.
  std::int64_t line0 = 0, line1 = -1;
};

// The kernels take the query rows and keep the output rows in a column order of their own for
// rows of `dtype` (bfloat16 rows are read two columns at a time and split into even and odd
// columns): out = `rows` rows of head_size floats of `in` put into that order (to_kernel) or back
// into the natural order. in != out.
void decode_column_order(DataType dtype, const float* in, std::int64_t rows, std::int64_t head_size,
                         float* out, bool to_kernel);

// s[g·lds + j] = Σ_d q[g·head_size + d] · k.row(j)[d] for g < groups, j < k.n, d < head_size:
// key rows of `dtype` (float32, float16, bfloat16, each contiguous), q in the kernels' column
// order. Prefetches `next`.
void decode_scores(const float* q, std::int64_t groups, const CacheRows& k, DataType dtype,
                   std::int64_t head_size, float* s, std::int64_t lds, const PrefetchRows& next);

// o[g·head_size + d] = corr[g] · o[g·head_size + d] + Σ_j p[g·ldp + j] · v.row(j)[d] for
// g < groups, j < v.n, d < head_size: value rows of `dtype` as above, o in the kernels' column
// order. Prefetches `next`.
void decode_values(const float* p, std::int64_t ldp, const float* corr, std::int64_t groups,
                   const CacheRows& v, DataType dtype, std::int64_t head_size, float* o,
                   const PrefetchRows& next);

}  // namespace tileops::ops::cpu
