#include "src/ops/cpu/simd/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/attention_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/convert-inl.h"
#include "src/ops/cpu/simd/fast_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

std::int64_t AttentionNr() { return 3 * static_cast<std::int64_t>(hn::Lanes(DF())); }

// A kMr×(kNv vectors) register tile as in the GEMM micro-kernel, but A is read row-major (kMr
// broadcasts from kMr rows per k): scores and probabilities are used where they were computed,
// without packing them. B rows are 3 vectors apart (a strip); kNv < 3 uses the leading columns.
template <int kMr, int kNv>
HWY_NOINLINE void TileKernel(const float* HWY_RESTRICT a, std::int64_t lda,
                             const float* HWY_RESTRICT b, std::int64_t kc, float* HWY_RESTRICT c,
                             std::int64_t ldc, bool accumulate) {
  const DF d;
  const std::size_t n = hn::Lanes(d);
  const float* rows[kMr];
  for (int i = 0; i < kMr; ++i) rows[i] = a + i * lda;
  hn::Vec<DF> acc[kMr][kNv];
  for (auto& row : acc) {
    for (auto& v : row) v = hn::Zero(d);
  }
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    hn::Vec<DF> bv[kNv];
    for (int j = 0; j < kNv; ++j) bv[j] = hn::LoadU(d, b + j * n);
    for (int i = 0; i < kMr; ++i) {
      const auto av = hn::Set(d, rows[i][p]);
      for (int j = 0; j < kNv; ++j) acc[i][j] = hn::MulAdd(av, bv[j], acc[i][j]);
    }
    b += 3 * n;
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNv; ++j) {
      float* out = c + i * ldc + j * n;
      hn::StoreU(accumulate ? hn::Add(acc[i][j], hn::LoadU(d, out)) : acc[i][j], d, out);
    }
  }
}

// AVX-512's 32 registers hold an 8×3 tile (24 accumulators): two row strips at once halve the
// B loads per FMA and the tile's prologue and epilogue per FLOP.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kStripsAtOnce = 2;
#else
constexpr int kStripsAtOnce = 1;
#endif

using TileKernelFn = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*,
                              std::int64_t, bool);

template <int kMr>
TileKernelFn tile_kernel(std::int64_t vectors) {
  return vectors >= 3   ? &TileKernel<kMr, 3>
         : vectors == 2 ? &TileKernel<kMr, 2>
                        : &TileKernel<kMr, 1>;
}

// B strips outside, row groups inside: one B strip (kc×Nr floats) stays in L1 while the rows
// stream from L2. The last strip computes only the vectors that hold its last_cols columns.
void TileProduct(const float* a, std::int64_t lda, std::int64_t m_strips, const float* b,
                 std::int64_t b_strip, std::int64_t n_strips, std::int64_t last_cols,
                 std::int64_t kc, float* c, std::int64_t ldc, bool accumulate) {
  const std::int64_t nr = AttentionNr();
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(DF()));
  for (std::int64_t t = 0; t < n_strips; ++t) {
    const std::int64_t vectors = t + 1 < n_strips ? 3 : (last_cols + lanes - 1) / lanes;
    const TileKernelFn wide = tile_kernel<kStripsAtOnce * kAttentionMr>(vectors);
    const TileKernelFn narrow = tile_kernel<kAttentionMr>(vectors);
    for (std::int64_t s = 0; s < m_strips;) {
      const bool both = s + kStripsAtOnce <= m_strips;
      (both ? wide : narrow)(a + s * kAttentionMr * lda, lda, b + t * b_strip, kc,
                             c + s * kAttentionMr * ldc + t * nr, ldc, accumulate);
      s += both ? kStripsAtOnce : 1;
    }
  }
}

// Whether any of row[0, cols) is NaN (only asked of rows whose max is -inf).
HWY_INLINE bool HasNaN(DF d, const float* row, std::int64_t cols) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto nan = hn::FirstN(d, 0);
  std::int64_t j = 0;
  for (; j + lanes <= cols; j += lanes) nan = hn::Or(nan, hn::IsNaN(hn::LoadU(d, row + j)));
  bool any = !hn::AllFalse(d, nan);
  for (; j < cols; ++j) any |= std::isnan(row[j]);
  return any;
}

// The online-softmax step (attention_kernels.h) over scale·s (scale > 0). The probabilities go
// to s_out (float32, the layout of s), or with kBF16 to P's bfloat16 row tiles (p, p_cols
// columns, zeros from cols on).
template <bool kBF16>
HWY_INLINE void SoftmaxRows(const float* s, std::int64_t lds, std::int64_t rows, std::int64_t cols,
                            float scale, float* m, float* l, float* corr, float* s_out,
                            std::uint16_t* p, std::int64_t p_cols) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr float kLog2E = 1.44269504088896341f;
  constexpr std::int64_t kTileRows = 16, kStepK = 32;  // P's row tiles (amx_kernels.h)
  const auto vscale = hn::Set(d, scale);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = s + r * lds;
    float* row_out = kBF16 ? nullptr : s_out + r * lds;
    // Element c of P's row r (a vector's lanes stay within one 32-column step).
    std::uint16_t* p_row =
        kBF16 ? p + r / kTileRows * kTileRows * p_cols + r % kTileRows * kStepK : nullptr;
    const auto p_at = [&](std::int64_t c) {
      return p_row + c / kStepK * kTileRows * kStepK + c % kStepK;
    };
    auto vmax = hn::Set(d, kNegInf);
    std::int64_t j = 0;
    for (; j + lanes <= cols; j += lanes) vmax = hn::Max(vmax, hn::LoadU(d, row + j));
    float tile_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
    for (; j < cols; ++j) tile_max = std::max(tile_max, row[j]);
    // Max drops NaN, but e^(NaN - m) is NaN: NaN scores reach l and the output through the
    // sums below, whatever the max is.
    const float m_new = std::max(m[r], tile_max * scale);
    // Nothing visible in this row yet (all -inf), unless the max dropped NaN scores: those go
    // the general way, where -inf - 0 gives 0 and NaN stays NaN.
    if (m_new == kNegInf && !HasNaN(d, row, cols)) {
      for (j = 0; j < (kBF16 ? p_cols : cols); ++j) {
        if constexpr (kBF16) {
          *p_at(j) = 0;
        } else {
          row_out[j] = 0.0f;
        }
      }
      corr[r] = 1.0f;
      continue;
    }
    const float m_sub = m_new == kNegInf ? 0.0f : m_new;
    const auto vm = hn::Set(d, m_sub);
    const auto vscale2 = hn::Set(d, scale * kLog2E), vm2 = hn::Set(d, m_sub * kLog2E);
    auto vsum = hn::Zero(d);
    for (j = 0; j + lanes <= cols; j += lanes) {
      const auto x = hn::LoadU(d, row + j);
      // Probabilities rounded to bfloat16 need no more than Exp2Coarse's 3e-6.
      const auto e = kBF16 ? Exp2CoarseNonPositive(d, hn::MulSub(x, vscale2, vm2))
                           : ExpNonPositive(d, hn::MulSub(x, vscale, vm));
      vsum = hn::Add(vsum, e);
      if constexpr (kBF16) {
        StoreF32AsBF16(d, e, p_at(j));
      } else {
        hn::StoreU(e, d, row_out + j);
      }
    }
    float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
    for (; j < cols; ++j) {
      const float e = row[j] == kNegInf ? 0.0f : std::exp(row[j] * scale - m_sub);
      sum += e;
      if constexpr (kBF16) {
        *p_at(j) = float_to_bfloat16(e);
      } else {
        row_out[j] = e;
      }
    }
    if constexpr (kBF16) {
      for (; j < p_cols; ++j) *p_at(j) = 0;
    }
    corr[r] = m[r] == m_new ? 1.0f : (m[r] == kNegInf ? 0.0f : std::exp(m[r] - m_new));
    l[r] = l[r] * corr[r] + sum;
    m[r] = m_new;
  }
}

void SoftmaxTile(float* s, std::int64_t lds, std::int64_t rows, std::int64_t cols, float* m,
                 float* l, float* corr) {
  SoftmaxRows<false>(s, lds, rows, cols, 1.0f, m, l, corr, s, nullptr, 0);
}

void SoftmaxTileBF16(const float* s, std::int64_t lds, std::int64_t rows, std::int64_t cols,
                     float scale, float* m, float* l, float* corr, std::uint16_t* p,
                     std::int64_t p_cols) {
  SoftmaxRows<true>(s, lds, rows, cols, scale, m, l, corr, nullptr, p, p_cols);
}

void ScaleRows(float* o, std::int64_t ldo, std::int64_t rows, std::int64_t cols,
               const float* factor) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t r = 0; r < rows; ++r) {
    if (factor[r] == 1.0f) continue;
    float* row = o + r * ldo;
    const auto f = hn::Set(d, factor[r]);
    std::int64_t j = 0;
    for (; j + lanes <= cols; j += lanes) hn::StoreU(hn::Mul(f, hn::LoadU(d, row + j)), d, row + j);
    for (; j < cols; ++j) row[j] *= factor[r];
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(AttentionNr);
HWY_EXPORT(TileProduct);
HWY_EXPORT(SoftmaxTile);
HWY_EXPORT(SoftmaxTileBF16);
HWY_EXPORT(ScaleRows);

std::int64_t attention_nr() {
  static const std::int64_t nr = TILEOPS_DYNAMIC_DISPATCH(AttentionNr)();
  return nr;
}

void attention_tile_product(const float* a, std::int64_t lda, std::int64_t m_strips, const float* b,
                            std::int64_t b_strip, std::int64_t n_strips, std::int64_t last_cols,
                            std::int64_t kc, float* c, std::int64_t ldc, bool accumulate) {
  const auto product = TILEOPS_DYNAMIC_DISPATCH(TileProduct);
  product(a, lda, m_strips, b, b_strip, n_strips, last_cols, kc, c, ldc, accumulate);
}

void attention_softmax_tile(float* s, std::int64_t lds, std::int64_t rows, std::int64_t cols,
                            float* m, float* l, float* corr) {
  TILEOPS_DYNAMIC_DISPATCH(SoftmaxTile)(s, lds, rows, cols, m, l, corr);
}

void attention_softmax_tile_bf16(const float* s, std::int64_t lds, std::int64_t rows,
                                 std::int64_t cols, float scale, float* m, float* l, float* corr,
                                 std::uint16_t* p, std::int64_t p_cols) {
  TILEOPS_DYNAMIC_DISPATCH(SoftmaxTileBF16)(s, lds, rows, cols, scale, m, l, corr, p, p_cols);
}

void attention_scale_rows(float* o, std::int64_t ldo, std::int64_t rows, std::int64_t cols,
                          const float* factor) {
  TILEOPS_DYNAMIC_DISPATCH(ScaleRows)(o, ldo, rows, cols, factor);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
