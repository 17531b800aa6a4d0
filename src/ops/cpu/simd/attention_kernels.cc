#include "src/ops/cpu/simd/attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "tileops/core/error.h"
#include "tileops/core/float16.h"

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

struct F32Rows {
  using T = float;
  static HWY_INLINE hn::Vec<DF> Load(DF d, const T* p) { return hn::LoadU(d, p); }
  static float ToF32(T x) { return x; }
};
struct BF16Rows {
  using T = std::uint16_t;
  static HWY_INLINE hn::Vec<DF> Load(DF d, const T* p) { return LoadBF16AsF32(d, p); }
  static float ToF32(T x) { return bfloat16_to_float(x); }
};
struct F16Rows {
  using T = std::uint16_t;
  static HWY_INLINE hn::Vec<DF> Load(DF d, const T* p) { return LoadF16AsF32(d, p); }
  static float ToF32(T x) { return float16_to_float(x); }
};

// Four keys at a time: four independent FMA chains per query row, reduced at the end. The
// rows (a few KiB) come from memory for the first query row of the group and from L1 after.
template <class R>
void Scores(const float* q, std::int64_t ldq, std::int64_t groups, const void* k_bytes,
            std::int64_t ldk, std::int64_t n, std::int64_t head_size, float* s, std::int64_t lds) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dv = head_size / lanes * lanes;
  const auto* k = static_cast<const typename R::T*>(k_bytes);
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const typename R::T* k0 = k + j * ldk;
    const typename R::T* k1 = k0 + ldk;
    const typename R::T* k2 = k1 + ldk;
    const typename R::T* k3 = k2 + ldk;
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* qg = q + g * ldq;
      auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
      for (std::int64_t c = 0; c < dv; c += lanes) {
        const auto qv = hn::LoadU(d, qg + c);
        a0 = hn::MulAdd(qv, R::Load(d, k0 + c), a0);
        a1 = hn::MulAdd(qv, R::Load(d, k1 + c), a1);
        a2 = hn::MulAdd(qv, R::Load(d, k2 + c), a2);
        a3 = hn::MulAdd(qv, R::Load(d, k3 + c), a3);
      }
      float r0 = hn::GetLane(hn::SumOfLanes(d, a0)), r1 = hn::GetLane(hn::SumOfLanes(d, a1));
      float r2 = hn::GetLane(hn::SumOfLanes(d, a2)), r3 = hn::GetLane(hn::SumOfLanes(d, a3));
      for (std::int64_t c = dv; c < head_size; ++c) {
        r0 += qg[c] * R::ToF32(k0[c]), r1 += qg[c] * R::ToF32(k1[c]);
        r2 += qg[c] * R::ToF32(k2[c]), r3 += qg[c] * R::ToF32(k3[c]);
      }
      float* sg = s + g * lds + j;
      sg[0] = r0, sg[1] = r1, sg[2] = r2, sg[3] = r3;
    }
  }
  for (; j < n; ++j) {
    const typename R::T* kj = k + j * ldk;
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* qg = q + g * ldq;
      auto a = hn::Zero(d);
      for (std::int64_t c = 0; c < dv; c += lanes) {
        a = hn::MulAdd(hn::LoadU(d, qg + c), R::Load(d, kj + c), a);
      }
      float r = hn::GetLane(hn::SumOfLanes(d, a));
      for (std::int64_t c = dv; c < head_size; ++c) r += qg[c] * R::ToF32(kj[c]);
      s[g * lds + j] = r;
    }
  }
}

void ScoresF32(const float* q, std::int64_t ldq, std::int64_t groups, const void* k,
               std::int64_t ldk, std::int64_t n, std::int64_t head_size, float* s,
               std::int64_t lds) {
  Scores<F32Rows>(q, ldq, groups, k, ldk, n, head_size, s, lds);
}
void ScoresBF16(const float* q, std::int64_t ldq, std::int64_t groups, const void* k,
                std::int64_t ldk, std::int64_t n, std::int64_t head_size, float* s,
                std::int64_t lds) {
  Scores<BF16Rows>(q, ldq, groups, k, ldk, n, head_size, s, lds);
}
void ScoresF16(const float* q, std::int64_t ldq, std::int64_t groups, const void* k,
               std::int64_t ldk, std::int64_t n, std::int64_t head_size, float* s,
               std::int64_t lds) {
  Scores<F16Rows>(q, ldq, groups, k, ldk, n, head_size, s, lds);
}

// Eight vector columns of o at a time, kept in registers over all n value rows: eight
// independent FMA chains cover the FMA latency (two chains would leave the units 3/4 idle). The n
// rows (a run of keys, a few KiB) come from memory for the first query row of the group and from
// L1 after.
template <class R>
void AccumulateValues(const float* p, std::int64_t ldp, std::int64_t groups, const void* v_bytes,
                      std::int64_t ldv, std::int64_t n, std::int64_t head_size, float* o,
                      std::int64_t ldo) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  constexpr int kVectors = 8;
  const auto* v = static_cast<const typename R::T*>(v_bytes);
  for (std::int64_t g = 0; g < groups; ++g) {
    const float* pg = p + g * ldp;
    float* og = o + g * ldo;
    std::int64_t c = 0;
    for (; c + kVectors * lanes <= head_size; c += kVectors * lanes) {
      hn::Vec<DF> acc[kVectors];
      for (int i = 0; i < kVectors; ++i) acc[i] = hn::LoadU(d, og + c + i * lanes);
      for (std::int64_t j = 0; j < n; ++j) {
        const auto w = hn::Set(d, pg[j]);
        const typename R::T* row = v + j * ldv + c;
        for (int i = 0; i < kVectors; ++i) {
          acc[i] = hn::MulAdd(w, R::Load(d, row + i * lanes), acc[i]);
        }
      }
      for (int i = 0; i < kVectors; ++i) hn::StoreU(acc[i], d, og + c + i * lanes);
    }
    for (; c + lanes <= head_size; c += lanes) {
      auto acc = hn::LoadU(d, og + c);
      for (std::int64_t j = 0; j < n; ++j) {
        acc = hn::MulAdd(hn::Set(d, pg[j]), R::Load(d, v + j * ldv + c), acc);
      }
      hn::StoreU(acc, d, og + c);
    }
    for (; c < head_size; ++c) {
      float acc = og[c];
      for (std::int64_t j = 0; j < n; ++j) acc += pg[j] * R::ToF32(v[j * ldv + c]);
      og[c] = acc;
    }
  }
}

void AccumulateF32(const float* p, std::int64_t ldp, std::int64_t groups, const void* v,
                   std::int64_t ldv, std::int64_t n, std::int64_t head_size, float* o,
                   std::int64_t ldo) {
  AccumulateValues<F32Rows>(p, ldp, groups, v, ldv, n, head_size, o, ldo);
}
void AccumulateBF16(const float* p, std::int64_t ldp, std::int64_t groups, const void* v,
                    std::int64_t ldv, std::int64_t n, std::int64_t head_size, float* o,
                    std::int64_t ldo) {
  AccumulateValues<BF16Rows>(p, ldp, groups, v, ldv, n, head_size, o, ldo);
}
void AccumulateF16(const float* p, std::int64_t ldp, std::int64_t groups, const void* v,
                   std::int64_t ldv, std::int64_t n, std::int64_t head_size, float* o,
                   std::int64_t ldo) {
  AccumulateValues<F16Rows>(p, ldp, groups, v, ldv, n, head_size, o, ldo);
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
HWY_EXPORT(ScoresF32);
HWY_EXPORT(ScoresBF16);
HWY_EXPORT(ScoresF16);
HWY_EXPORT(AccumulateF32);
HWY_EXPORT(AccumulateBF16);
HWY_EXPORT(AccumulateF16);

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

void attention_scores(const float* q, std::int64_t ldq, std::int64_t groups, const void* k,
                      DataType dtype, std::int64_t ldk, std::int64_t n, std::int64_t head_size,
                      float* s, std::int64_t lds) {
  switch (dtype) {
    case DataType::kFloat32:
      return HWY_DYNAMIC_DISPATCH(ScoresF32)(q, ldq, groups, k, ldk, n, head_size, s, lds);
    case DataType::kBFloat16:
      return HWY_DYNAMIC_DISPATCH(ScoresBF16)(q, ldq, groups, k, ldk, n, head_size, s, lds);
    case DataType::kFloat16:
      return HWY_DYNAMIC_DISPATCH(ScoresF16)(q, ldq, groups, k, ldk, n, head_size, s, lds);
    default:
      throw_internal_error("attention_scores", "dtype is not a float dtype");
  }
}

void attention_accumulate_values(const float* p, std::int64_t ldp, std::int64_t groups,
                                 const void* v, DataType dtype, std::int64_t ldv, std::int64_t n,
                                 std::int64_t head_size, float* o, std::int64_t ldo) {
  switch (dtype) {
    case DataType::kFloat32:
      return HWY_DYNAMIC_DISPATCH(AccumulateF32)(p, ldp, groups, v, ldv, n, head_size, o, ldo);
    case DataType::kBFloat16:
      return HWY_DYNAMIC_DISPATCH(AccumulateBF16)(p, ldp, groups, v, ldv, n, head_size, o, ldo);
    case DataType::kFloat16:
      return HWY_DYNAMIC_DISPATCH(AccumulateF16)(p, ldp, groups, v, ldv, n, head_size, o, ldo);
    default:
      throw_internal_error("attention_accumulate_values", "dtype is not a float dtype");
  }
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
