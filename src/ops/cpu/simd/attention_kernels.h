// SIMD kernels of the CPU attention (src/ops/cpu/attention/): the register-tiled product of
// row-major float32 rows with a packed panel (QKᵀ with the keys packed d-major, PV with the
// values packed key-major) and the online-softmax update of a score tile (decode's kernels are
// in decode_kernels.h).
#pragma once

#include <cstdint>

namespace tileops::ops::cpu {

// Rows of the tile product's register tile (A rows are visited in groups of this many).
inline constexpr std::int64_t kAttentionMr = 4;

// Columns of one packed strip: three float32 vectors of the best SIMD target (24 on AVX2).
std::int64_t attention_nr();

// c[i·ldc + t·Nr + j] (+)= Σ_p a[i·lda + p] · b[t·b_strip + p·Nr + j] for i < 4·m_strips,
// t < n_strips, j < Nr, p < kc. A is row-major (rows padded to a multiple of 4 by the caller),
// each B strip kc×Nr floats. accumulate = false overwrites c. Of the last strip, only the
// columns j < last_cols are needed: the vectors past them are skipped (their c is left as is).
void attention_tile_product(const float* a, std::int64_t lda, std::int64_t m_strips, const float* b,
                            std::int64_t b_strip, std::int64_t n_strips, std::int64_t last_cols,
                            std::int64_t kc, float* c, std::int64_t ldc, bool accumulate);

// Online-softmax step over a tile of scores s (rows × cols, row stride lds; -inf = masked):
// per row, m' = max(m, max_j s), s_j = e^(s_j - m'), corr = e^(m - m'), l = l·corr + Σ_j s_j,
// m = m'. A row whose scores are all -inf so far keeps m = -inf, gets zeros and corr = 1.
void attention_softmax_tile(float* s, std::int64_t lds, std::int64_t rows, std::int64_t cols,
                            float* m, float* l, float* corr);

// The same step over scale·s (scale > 0; -inf stays masked) for the bfloat16 block products:
// the probabilities go, rounded to bfloat16 (nearest even), into P's row tiles (amx_kernels.h's
// A layout, p_cols columns, zeros from column cols on) and s is left as it was.
void attention_softmax_tile_bf16(const float* s, std::int64_t lds, std::int64_t rows,
                                 std::int64_t cols, float scale, float* m, float* l, float* corr,
                                 std::uint16_t* p, std::int64_t p_cols);

// o[i·ldo + j] *= factor[i] for i < rows, j < cols (rows whose factor is 1 are skipped).
void attention_scale_rows(float* o, std::int64_t ldo, std::int64_t rows, std::int64_t cols,
                          const float* factor);

}  // namespace tileops::ops::cpu
