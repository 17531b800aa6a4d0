#include "src/ops/cpu/simd/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/attention_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/fast_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

std::int64_t AttentionNr() { return 3 * static_cast<std::int64_t>(hn::Lanes(DF())); }

// A 4×(3 vectors) register tile as in the GEMM micro-kernel, but A is read row-major (four
// broadcasts from four rows per k): scores and probabilities are used where they were computed,
// without packing them.
HWY_NOINLINE void TileKernel(const float* HWY_RESTRICT a, std::int64_t lda,
                             const float* HWY_RESTRICT b, std::int64_t kc, float* HWY_RESTRICT c,
                             std::int64_t ldc, bool accumulate) {
  const DF d;
  const std::size_t n = hn::Lanes(d);
  const float* a0 = a;
  const float* a1 = a + lda;
  const float* a2 = a + 2 * lda;
  const float* a3 = a + 3 * lda;
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c02 = hn::Zero(d);
  auto c10 = hn::Zero(d), c11 = hn::Zero(d), c12 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c22 = hn::Zero(d);
  auto c30 = hn::Zero(d), c31 = hn::Zero(d), c32 = hn::Zero(d);
#pragma GCC unroll 4
  for (std::int64_t p = 0; p < kc; ++p) {
    const auto b0 = hn::LoadU(d, b);
    const auto b1 = hn::LoadU(d, b + n);
    const auto b2 = hn::LoadU(d, b + 2 * n);
    auto av = hn::Set(d, a0[p]);
    c00 = hn::MulAdd(av, b0, c00);
    c01 = hn::MulAdd(av, b1, c01);
    c02 = hn::MulAdd(av, b2, c02);
    av = hn::Set(d, a1[p]);
    c10 = hn::MulAdd(av, b0, c10);
    c11 = hn::MulAdd(av, b1, c11);
    c12 = hn::MulAdd(av, b2, c12);
    av = hn::Set(d, a2[p]);
    c20 = hn::MulAdd(av, b0, c20);
    c21 = hn::MulAdd(av, b1, c21);
    c22 = hn::MulAdd(av, b2, c22);
    av = hn::Set(d, a3[p]);
    c30 = hn::MulAdd(av, b0, c30);
    c31 = hn::MulAdd(av, b1, c31);
    c32 = hn::MulAdd(av, b2, c32);
    b += 3 * n;
  }
  auto put = [&](std::int64_t row, std::size_t col, hn::Vec<DF> v) {
    float* p = c + row * ldc + col;
    if (accumulate) v = hn::Add(v, hn::LoadU(d, p));
    hn::StoreU(v, d, p);
  };
  put(0, 0, c00), put(0, n, c01), put(0, 2 * n, c02);
  put(1, 0, c10), put(1, n, c11), put(1, 2 * n, c12);
  put(2, 0, c20), put(2, n, c21), put(2, 2 * n, c22);
  put(3, 0, c30), put(3, n, c31), put(3, 2 * n, c32);
}

// B strips outside, row groups inside: one B strip (kc×Nr floats) stays in L1 while the rows
// stream from L2.
void TileProduct(const float* a, std::int64_t lda, std::int64_t m_strips, const float* b,
                 std::int64_t b_strip, std::int64_t n_strips, std::int64_t kc, float* c,
                 std::int64_t ldc, bool accumulate) {
  const std::int64_t nr = AttentionNr();
  for (std::int64_t t = 0; t < n_strips; ++t) {
    for (std::int64_t s = 0; s < m_strips; ++s) {
      TileKernel(a + s * kAttentionMr * lda, lda, b + t * b_strip, kc,
                 c + s * kAttentionMr * ldc + t * nr, ldc, accumulate);
    }
  }
}

void SoftmaxTile(float* s, std::int64_t lds, std::int64_t rows, std::int64_t cols, float* m,
                 float* l, float* corr) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = s + r * lds;
    auto vmax = hn::Set(d, kNegInf);
    std::int64_t j = 0;
    for (; j + lanes <= cols; j += lanes) vmax = hn::Max(vmax, hn::LoadU(d, row + j));
    float tile_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
    for (; j < cols; ++j) tile_max = std::max(tile_max, row[j]);
    const float m_new = std::max(m[r], tile_max);
    if (m_new == kNegInf) {  // nothing visible in this row yet
      for (j = 0; j < cols; ++j) row[j] = 0.0f;
      corr[r] = 1.0f;
      continue;
    }
    const auto vm = hn::Set(d, m_new);
    auto vsum = hn::Zero(d);
    for (j = 0; j + lanes <= cols; j += lanes) {
      const auto p = ExpNonPositive(d, hn::Sub(hn::LoadU(d, row + j), vm));
      vsum = hn::Add(vsum, p);
      hn::StoreU(p, d, row + j);
    }
    float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
    for (; j < cols; ++j) {
      row[j] = row[j] == kNegInf ? 0.0f : std::exp(row[j] - m_new);
      sum += row[j];
    }
    corr[r] = m[r] == m_new ? 1.0f : (m[r] == kNegInf ? 0.0f : std::exp(m[r] - m_new));
    l[r] = l[r] * corr[r] + sum;
    m[r] = m_new;
  }
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
HWY_EXPORT(ScaleRows);

std::int64_t attention_nr() {
  static const std::int64_t nr = HWY_DYNAMIC_DISPATCH(AttentionNr)();
  return nr;
}

void attention_tile_product(const float* a, std::int64_t lda, std::int64_t m_strips, const float* b,
                            std::int64_t b_strip, std::int64_t n_strips, std::int64_t kc, float* c,
                            std::int64_t ldc, bool accumulate) {
  HWY_DYNAMIC_DISPATCH(TileProduct)(a, lda, m_strips, b, b_strip, n_strips, kc, c, ldc, accumulate);
}

void attention_softmax_tile(float* s, std::int64_t lds, std::int64_t rows, std::int64_t cols,
                            float* m, float* l, float* corr) {
  HWY_DYNAMIC_DISPATCH(SoftmaxTile)(s, lds, rows, cols, m, l, corr);
}

void attention_scale_rows(float* o, std::int64_t ldo, std::int64_t rows, std::int64_t cols,
                          const float* factor) {
  HWY_DYNAMIC_DISPATCH(ScaleRows)(o, ldo, rows, cols, factor);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
