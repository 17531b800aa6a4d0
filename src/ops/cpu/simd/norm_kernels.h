// SIMD row kernels of the normalisation operators (float32 rows).
#pragma once

#include <cstdint>

namespace tileops::ops::cpu {

// Σ x[i]² in float32 (several accumulators; order differs from a serial sum).
float sum_of_squares(const float* x, std::int64_t n);

// out[i] = a[i] + b[i]; out may alias a or b.
void add_rows(const float* a, const float* b, std::int64_t n, float* out);

// out[i] = x[i] · scale · w[i]; out may alias x.
void scale_by_weight(const float* x, const float* w, float scale, std::int64_t n, float* out);

}  // namespace tileops::ops::cpu
