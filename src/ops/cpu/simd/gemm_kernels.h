// SIMD kernels of the native GEMM (src/ops/cpu/gemm/): the register-tiled micro-kernel over
// packed float32 panels, the epilogue that scales, adds and rounds a row of results, and the
// weight-streaming dot-product kernel of the small-M (decode) path.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// Rows of an A strip (A is packed in strips of this many rows): one register tile on AVX-512,
// two on AVX2.
inline constexpr std::int64_t kGemmMr = 8;

// Columns of the micro-kernel's register tile on this CPU: three float32 vectors of the best
// SIMD target (24 on AVX2, 48 on AVX-512). B is packed in strips of this many columns.
std::int64_t gemm_nr();

// Where gemm_macro_kernel writes the tiles that lie wholly inside the caller's C: a float32 C of
// unit column stride (row stride ldc) at the macro kernel's tile (0, 0), with bias[j] (null:
// none) added, alpha = 1 and beta = 0. Tiles of A strips from full_m_strips on or of B strips
// from full_n_strips on (the edges, computed whole with their padding) go to acc instead. The
// last K block's call takes it: C is then written once, with no epilogue pass over acc.
struct GemmDirectOut {
  float* c;
  std::int64_t ldc;
  const float* bias;
  std::int64_t full_m_strips, full_n_strips;
};

// acc tiles += A·B over packed panels. `a` holds `m_strips` strips of kc×kGemmMr floats
// (a[k·Mr + i]), `b` holds `n_strips` strips of kc×Nr floats (b[k·Nr + j]), both 64-byte
// aligned; tile (s, t) is written at acc + s·Mr·ld_acc + t·Nr, whole (padding included).
// accumulate = false overwrites the tiles instead of adding to them. With `direct`, the tiles it
// covers are written there (+ acc's tile when accumulating) and acc's are left as they were.
void gemm_macro_kernel(const float* a, std::int64_t m_strips, const float* b, std::int64_t n_strips,
                       std::int64_t kc, float* acc, std::int64_t ld_acc, bool accumulate,
                       const GemmDirectOut* direct = nullptr);

// out[j] = alpha·acc[j] + beta·c[j] + bias[j] for j < n; c and bias may be null (then omitted),
// out may alias c.
void gemm_epilogue_row(const float* acc, float alpha, const float* c, float beta, const float* bias,
                       std::int64_t n, float* out);

// out[p·ld + r] = rows[r][p] for r < n_rows, p < count (the packs of row-major A strips and of
// a linear's weight).
void gemm_transpose_rows(const float* const* rows, std::int64_t n_rows, std::int64_t count,
                         float* out, std::int64_t ld);

// out[i·ld_out + j] = Σ_p x[i·ld_x + p] · w[j·ld_w + p] for i < m, j < n, p < k: float32 rows x
// against weight rows w of w_dtype (float32, float16, bfloat16, or float8_e4m3fn/e5m2 codes
// decoded in registers) read exactly once from memory
// (m <= 16: the x rows are revisited from cache).
void gemm_dot_rows(const float* x, std::int64_t ld_x, std::int64_t m, const void* w,
                   DataType w_dtype, std::int64_t ld_w, std::int64_t n, std::int64_t k, float* out,
                   std::int64_t ld_out);

}  // namespace tileops::ops::cpu
