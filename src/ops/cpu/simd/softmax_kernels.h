// SIMD row kernels of the softmax operators (float32 rows), and the row softmax built on them.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// out[i] = e^x[i] (Highway's Exp: within 1 ulp of std::exp for x in [-87, 88]; exactly 0 for
// x < -104 and x = -inf). out may alias x.
void exp_row(const float* x, std::int64_t n, float* out);

// out[i] = e^x[i] for x[i] <= 0, the exp of the row softmax: within 2 ulp of std::exp down to
// -87.3 and exactly 0 below (-inf included); NaN stays NaN. out may alias x.
void exp_non_positive_row(const float* x, std::int64_t n, float* out);

// max_i scale·x[i] in float32, or NaN when any scale·x[i] is NaN (n >= 1).
float scaled_max(const float* x, float scale, std::int64_t n);

// out[i] = e^(scale·x[i] − shift); returns Σ out[i] (float32, several accumulators). out may
// alias x. Meanwhile pulls up to `next_bytes` bytes at `next` into the L2 cache (nullptr: none),
// so the memory read of the caller's next row overlaps this compute-bound pass.
float scaled_exp_sum(const float* x, float scale, float shift, std::int64_t n, float* out,
                     const void* next = nullptr, std::int64_t next_bytes = 0);

// out[i] = x[i] · factor. out may alias x.
void scale_row(const float* x, float factor, std::int64_t n, float* out);

// out = softmax(scale · x) over the n >= 1 entries of the row: three passes over the row (max;
// exp and sum; scale), float32 math. A row whose scaled values hold a NaN or +inf, or are all
// -inf, becomes NaN everywhere (as torch.softmax gives). out may alias x. next, next_bytes: the
// caller's next row, prefetched during the exp pass (see scaled_exp_sum). stream: the last pass
// writes out with streaming stores (src/ops/cpu/streaming.h).
void softmax_row(const float* x, float scale, std::int64_t n, float* out,
                 const void* next = nullptr, std::int64_t next_bytes = 0, bool stream = false);

}  // namespace tileops::ops::cpu
