// SIMD kernels of the gated delta rule (src/ops/cpu/gated_delta_rule.cc) over float32 rows: the
// per-token state passes of the recurrent form and the small matrix product of the chunked one.
// A state is [rows, n] row-major (row stride n); vectors run along n (the value dim).
#pragma once

#include <cstdint>

namespace tileops::ops::cpu {

// s[r][:] *= decay for every row, and out[:] = Σ_r x[r] · s[r][:] (after the decay).
void delta_decay_and_project(float* s, std::int64_t rows, std::int64_t n, float decay,
                             const float* x, float* out);

// s[r][:] += a[r] · delta[:] for every row, and out[:] = Σ_r x[r] · s[r][:] (after the update).
void delta_update_and_project(float* s, std::int64_t rows, std::int64_t n, const float* a,
                              const float* delta, const float* x, float* out);

// c[i][:n] = (accumulate ? c[i][:n] : 0) + Σ_{r < depth} a[i·lda + r] · b[r·ldb :][:n] for
// i < m: a row-major product with float32 accumulation, blocked over rows of c.
void delta_matmul(const float* a, std::int64_t lda, std::int64_t m, const float* b,
                  std::int64_t ldb, std::int64_t depth, std::int64_t n, float* c, std::int64_t ldc,
                  bool accumulate);

}  // namespace tileops::ops::cpu
