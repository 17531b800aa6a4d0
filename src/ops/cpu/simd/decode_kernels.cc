#include "src/ops/cpu/simd/decode_kernels.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/decode_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// AVX-512 has 32 vector registers: the tiles of four query rows can then hold four keys (16
// accumulators and the 8 query vectors of a pair block) or four value vectors per row.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kWide = 4;
#else
constexpr int kWide = 2;
#endif

// Part [a, b) of `all` equal parts of next's lines, in order: the kernels spread the prefetch
// over their steps (a burst of prefetches fills the miss buffers, and the loads wait behind it).
HWY_INLINE void PrefetchPart(const PrefetchRows& next, std::int64_t a, std::int64_t b,
                             std::int64_t all) {
  const std::int64_t per_row = (next.bytes + 63) / 64;
  const std::int64_t end = next.line1 < 0 ? next.rows.n * per_row : next.line1;
  const std::int64_t lines = end - next.line0;
  const std::int64_t l0 = next.line0 + lines * a / all, l1 = next.line0 + lines * b / all;
  std::int64_t i = l0 / per_row, offset = l0 % per_row * 64;
  for (std::int64_t l = l0; l < l1; ++l) {
    __builtin_prefetch(next.rows.first[i] + next.rows.offset + offset, 0, 1);
    offset += 64;
    if (offset == per_row * 64) offset = 0, ++i;
  }
}

template <class R>
HWY_INLINE const typename R::T* RowOf(const CacheRows& rows, std::int64_t i) {
  return static_cast<const typename R::T*>(rows.row(i));
}

// Stores the sum of the 128-bit blocks of s (4 floats) at out.
#if !(HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE)
template <class D>
HWY_INLINE void StoreBlocks(D d, hn::Vec<D> s, float* out) {
  if constexpr (hn::MaxLanes(D()) <= 4) {
    hn::StoreU(s, d, out);
  } else {
    const hn::Half<D> dh;
    StoreBlocks(dh, hn::Add(hn::LowerHalf(dh, s), hn::UpperHalf(dh, s)), out);
  }
}
#endif

// out[i] = the sum of the lanes of v[i], i < 4, without a horizontal sum per vector: lanes are
// transposed and added within each 128-bit block, then the blocks are folded.
HWY_INLINE void Sum4(const VF* v, float* out) {
  const DF d;
#if HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE
  for (int i = 0; i < 4; ++i) out[i] = hn::GetLane(hn::SumOfLanes(d, v[i]));
#else
  const hn::Repartition<std::uint64_t, DF> du;
  const VF ab = hn::Add(hn::InterleaveLower(d, v[0], v[1]), hn::InterleaveUpper(d, v[0], v[1]));
  const VF ce = hn::Add(hn::InterleaveLower(d, v[2], v[3]), hn::InterleaveUpper(d, v[2], v[3]));
  const auto x = hn::BitCast(du, ab), y = hn::BitCast(du, ce);
  StoreBlocks(d,
              hn::Add(hn::BitCast(d, hn::InterleaveLower(du, x, y)),
                      hn::BitCast(d, hn::InterleaveUpper(du, x, y))),
              out);
#endif
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// s[h·lds + i] = the sum of the lanes of v[4h + i], h, i < 4, for 16-lane vectors: the 16 sums
// come out of one transposing tree in a single vector (block h = head h's four keys), instead of
// four Sum4 and sixteen scalar stores.
HWY_INLINE void Store16Sums(const VF* v, float* s, std::int64_t lds) {
  const DF d;
  const hn::Repartition<std::uint64_t, DF> du;
  VF u[4];
  for (int g = 0; g < 4; ++g) {
    const VF* w = v + 4 * g;
    const VF ab = hn::Add(hn::InterleaveLower(d, w[0], w[1]), hn::InterleaveUpper(d, w[0], w[1]));
    const VF ce = hn::Add(hn::InterleaveLower(d, w[2], w[3]), hn::InterleaveUpper(d, w[2], w[3]));
    const auto x = hn::BitCast(du, ab), y = hn::BitCast(du, ce);
    // Block b of u[g]: the sums over block b of w[0..3].
    u[g] = hn::Add(hn::BitCast(d, hn::InterleaveLower(du, x, y)),
                   hn::BitCast(d, hn::InterleaveUpper(du, x, y)));
  }
  // Blocks [0, 2] + [1, 3] of two vectors, then again: block g = the block sum of u[g].
  const auto fold = [](VF a, VF b) {
    return VF{_mm512_add_ps(_mm512_shuffle_f32x4(a.raw, b.raw, 0x88),
                            _mm512_shuffle_f32x4(a.raw, b.raw, 0xDD))};
  };
  alignas(64) float sums[16];
  hn::Store(fold(fold(u[0], u[1]), fold(u[2], u[3])), d, sums);
  for (int h = 0; h < 4; ++h) std::memcpy(s + h * lds, sums + 4 * h, 4 * sizeof(float));
}
#endif

// The columns [0, PairColumns) of a head are in pair order for kernels on rows of R: each block
// of 2·Lanes columns holds its even-indexed columns, then its odd-indexed ones (the order of
// R::LoadPairs). The other columns are in their natural order.
template <class R>
std::int64_t PairColumns(std::int64_t head_size) {
  if constexpr (R::kPairs) {
    const std::int64_t block = 2 * static_cast<std::int64_t>(hn::Lanes(DF()));
    return head_size / block * block;
  } else {
    return 0;
  }
}

// Scores of kH query rows against kK keys at a time: kK·kH independent FMA chains that load each
// key vector once for the kH rows (and each query vector once for the kK keys). Keys past n
// repeat the last one; their scores are dropped. With pair order (PairColumns), one load gives
// two key vectors, which halves the loads and conversions per FMA.
template <class R, int kK, int kH>
void ScoresTile(const float* q, std::int64_t ldq, const CacheRows& k, std::int64_t head_size,
                float* s, std::int64_t lds, const PrefetchRows* next) {
  const std::int64_t n = k.n;
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dp = PairColumns<R>(head_size);
  const std::int64_t dv = head_size / lanes * lanes;
  constexpr int kA = (kK * kH + 3) / 4 * 4;
  for (std::int64_t j = 0; j < n; j += kK) {
    if (next != nullptr) PrefetchPart(*next, j, std::min(j + kK, n), n);
    const typename R::T* rows[kK];
    for (int i = 0; i < kK; ++i) rows[i] = RowOf<R>(k, std::min<std::int64_t>(j + i, n - 1));
    VF acc[kA];
    for (int a = 0; a < kA; ++a) acc[a] = hn::Zero(d);
    if constexpr (R::kPairs) {
      for (std::int64_t c = 0; c < dp; c += 2 * lanes) {
        for (int i = 0; i < kK; ++i) {
          VF even, odd;
          R::LoadPairs(d, rows[i] + c, even, odd);
          for (int h = 0; h < kH; ++h) {
            const float* qh = q + h * ldq + c;
            acc[i * kH + h] = hn::MulAdd(hn::LoadU(d, qh), even, acc[i * kH + h]);
            acc[i * kH + h] = hn::MulAdd(hn::LoadU(d, qh + lanes), odd, acc[i * kH + h]);
          }
        }
      }
    }
    for (std::int64_t c = dp; c < dv; c += lanes) {
      VF qv[kH];
      for (int h = 0; h < kH; ++h) qv[h] = hn::LoadU(d, q + h * ldq + c);
      for (int i = 0; i < kK; ++i) {
        const VF x = R::Load(d, rows[i] + c);
        for (int h = 0; h < kH; ++h) acc[i * kH + h] = hn::MulAdd(qv[h], x, acc[i * kH + h]);
      }
    }
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (kK == 4 && kH == 4) {
      if (dv == head_size && j + kK <= n) {
        VF by_head[16];  // head-major: by_head[4h + i] = key i, head h
        for (int i = 0; i < 4; ++i) {
          for (int h = 0; h < 4; ++h) by_head[4 * h + i] = acc[i * kH + h];
        }
        Store16Sums(by_head, s + j, lds);
        continue;
      }
    }
#endif
    float r[kA];
    for (int a = 0; a < kA; a += 4) Sum4(acc + a, r + a);
    for (std::int64_t c = dv; c < head_size; ++c) {
      for (int i = 0; i < kK; ++i) {
        const float x = R::ToF32(rows[i][c]);
        for (int h = 0; h < kH; ++h) r[i * kH + h] += q[h * ldq + c] * x;
      }
    }
    for (int i = 0; i < kK && j + i < n; ++i) {
      for (int h = 0; h < kH; ++h) s[h * lds + j + i] = r[i * kH + h];
    }
  }
}

// Rows of `next` prefetched per kPrefetchEvery value rows: a few prefetches in a burst cost fewer
// instructions than a line per row, and small bursts keep the line fill buffers from filling up.
constexpr std::int64_t kPrefetchEvery = 8;

// Columns [c0, c0 + kC·Lanes) of kH output rows over all n value rows: each value vector is
// loaded (and widened) once for the kH rows. kPairs: the columns are whole blocks in pair order
// (PairColumns). Prefetches share [t, t + 1) of `tiles` shares of the `next` rows, spread over
// its value rows.
template <class R, int kH, int kC, bool kPairs = (R::kPairs && kC % 2 == 0)>
HWY_INLINE void ValuesTile(const float* p, std::int64_t ldp, const float* corr, const CacheRows& v,
                           std::int64_t c0, float* o, std::int64_t ldo,
                           const PrefetchRows* next = nullptr, std::int64_t t = 0,
                           std::int64_t tiles = 1) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  VF acc[kH * kC];
  for (int h = 0; h < kH; ++h) {
    const VF f = hn::Set(d, corr[h]);
    for (int i = 0; i < kC; ++i)
      acc[h * kC + i] = hn::Mul(f, hn::LoadU(d, o + h * ldo + c0 + i * lanes));
  }
  const std::int64_t all = tiles * v.n;
  for (std::int64_t j = 0; j < v.n; ++j) {
    if (next != nullptr && j % kPrefetchEvery == 0) {
      const std::int64_t at = t * v.n + j;
      PrefetchPart(*next, at, std::min(at + kPrefetchEvery, (t + 1) * v.n), all);
    }
    const typename R::T* row = RowOf<R>(v, j) + c0;
    VF x[kC];
    if constexpr (kPairs) {
      for (int i = 0; i < kC; i += 2) R::LoadPairs(d, row + i * lanes, x[i], x[i + 1]);
    } else {
      for (int i = 0; i < kC; ++i) x[i] = R::Load(d, row + i * lanes);
    }
    for (int h = 0; h < kH; ++h) {
      const VF w = hn::Set(d, p[h * ldp + j]);
      for (int i = 0; i < kC; ++i) acc[h * kC + i] = hn::MulAdd(w, x[i], acc[h * kC + i]);
    }
  }
  for (int h = 0; h < kH; ++h) {
    for (int i = 0; i < kC; ++i) hn::StoreU(acc[h * kC + i], d, o + h * ldo + c0 + i * lanes);
  }
}

// kH output rows, all columns: kC-vector tiles (which prefetch `next`), then single vectors, then
// scalars.
template <class R, int kH, int kC>
void ValuesRows(const float* p, std::int64_t ldp, const float* corr, const CacheRows& v,
                std::int64_t head_size, float* o, std::int64_t ldo, const PrefetchRows* next) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t tiles = head_size / (kC * lanes);
  std::int64_t c = 0;
  for (std::int64_t t = 0; t < tiles; ++t, c += kC * lanes) {
    ValuesTile<R, kH, kC>(p, ldp, corr, v, c, o, ldo, next, t, tiles);
  }
  if (tiles == 0 && next != nullptr) PrefetchPart(*next, 0, 1, 1);
  for (; c < PairColumns<R>(head_size); c += 2 * lanes) {  // pair blocks past the last tile
    ValuesTile<R, kH, 2>(p, ldp, corr, v, c, o, ldo);
  }
  for (; c + lanes <= head_size; c += lanes) {
    ValuesTile<R, kH, 1>(p, ldp, corr, v, c, o, ldo);
  }
  for (; c < head_size; ++c) {
    for (int h = 0; h < kH; ++h) {
      float acc = corr[h] * o[h * ldo + c];
      for (std::int64_t j = 0; j < v.n; ++j) acc += p[h * ldp + j] * R::ToF32(RowOf<R>(v, j)[c]);
      o[h * ldo + c] = acc;
    }
  }
}

// Query rows in tiles of four (the group of a kv head is usually 4 or 8), the rest in one
// smaller tile; only the first tile prefetches (the others read the same rows from L1).
template <class R>
void Scores(const float* q, std::int64_t groups, const CacheRows& k, std::int64_t head_size,
            float* s, std::int64_t lds, const PrefetchRows& next) {
  const PrefetchRows* pf = next.rows.n > 0 ? &next : nullptr;
  std::int64_t g = 0;
  for (; g + 4 <= groups; g += 4, pf = nullptr) {
    ScoresTile<R, kWide, 4>(q + g * head_size, head_size, k, head_size, s + g * lds, lds, pf);
  }
  const float* qg = q + g * head_size;
  switch (groups - g) {
    case 3:
      ScoresTile<R, 2, 3>(qg, head_size, k, head_size, s + g * lds, lds, pf);
      break;
    case 2:
      ScoresTile<R, 4, 2>(qg, head_size, k, head_size, s + g * lds, lds, pf);
      break;
    case 1:
      ScoresTile<R, 8, 1>(qg, head_size, k, head_size, s + g * lds, lds, pf);
      break;
    default:
      break;
  }
}

template <class R>
void Values(const float* p, std::int64_t ldp, const float* corr, std::int64_t groups,
            const CacheRows& v, std::int64_t head_size, float* o, const PrefetchRows& next) {
  const PrefetchRows* pf = next.rows.n > 0 ? &next : nullptr;
  std::int64_t g = 0;
  for (; g + 4 <= groups; g += 4, pf = nullptr) {
    ValuesRows<R, 4, kWide>(p + g * ldp, ldp, corr + g, v, head_size, o + g * head_size, head_size,
                            pf);
  }
  const float* pg = p + g * ldp;
  float* og = o + g * head_size;
  switch (groups - g) {
    case 3:
      ValuesRows<R, 3, 2>(pg, ldp, corr + g, v, head_size, og, head_size, pf);
      break;
    case 2:
      ValuesRows<R, 2, 4>(pg, ldp, corr + g, v, head_size, og, head_size, pf);
      break;
    case 1:
      ValuesRows<R, 1, 8>(pg, ldp, corr + g, v, head_size, og, head_size, pf);
      break;
    default:
      break;
  }
}

// The rows of `in` (head_size columns each) in the kernels' column order for rows of R, or back.
template <class R>
void ColumnOrder(const float* in, std::int64_t rows, std::int64_t head_size, float* out,
                 bool to_kernel) {
  const std::int64_t half = static_cast<std::int64_t>(hn::Lanes(DF()));
  const std::int64_t dp = PairColumns<R>(head_size);
  for (std::int64_t r = 0; r < rows; ++r, in += head_size, out += head_size) {
    for (std::int64_t c = 0; c < dp; c += 2 * half) {
      for (std::int64_t i = 0; i < half; ++i) {
        for (std::int64_t odd = 0; odd < 2; ++odd) {
          const std::int64_t natural = c + 2 * i + odd, kernel = c + odd * half + i;
          out[to_kernel ? kernel : natural] = in[to_kernel ? natural : kernel];
        }
      }
    }
    std::copy(in + dp, in + head_size, out + dp);
  }
}

#define TILEOPS_DECODE_KERNELS(NAME, R)                                                          \
  void Scores##NAME(const float* q, std::int64_t groups, const CacheRows& k,                     \
                    std::int64_t head_size, float* s, std::int64_t lds,                          \
                    const PrefetchRows& next) {                                                  \
    Scores<R>(q, groups, k, head_size, s, lds, next);                                            \
  }                                                                                              \
  void Values##NAME(const float* p, std::int64_t ldp, const float* corr, std::int64_t groups,    \
                    const CacheRows& v, std::int64_t head_size, float* o,                        \
                    const PrefetchRows& next) {                                                  \
    Values<R>(p, ldp, corr, groups, v, head_size, o, next);                                      \
  }                                                                                              \
  void ColumnOrder##NAME(const float* in, std::int64_t rows, std::int64_t head_size, float* out, \
                         bool to_kernel) {                                                       \
    ColumnOrder<R>(in, rows, head_size, out, to_kernel);                                         \
  }
TILEOPS_DECODE_KERNELS(F32, F32Elem)
TILEOPS_DECODE_KERNELS(BF16, BF16Elem)
TILEOPS_DECODE_KERNELS(F16, F16Elem)
#undef TILEOPS_DECODE_KERNELS

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(ScoresF32);
HWY_EXPORT(ScoresBF16);
HWY_EXPORT(ScoresF16);
HWY_EXPORT(ValuesF32);
HWY_EXPORT(ValuesBF16);
HWY_EXPORT(ValuesF16);
HWY_EXPORT(ColumnOrderF32);
HWY_EXPORT(ColumnOrderBF16);
HWY_EXPORT(ColumnOrderF16);

void decode_scores(const float* q, std::int64_t groups, const CacheRows& k, DataType dtype,
                   std::int64_t head_size, float* s, std::int64_t lds, const PrefetchRows& next) {
  switch (dtype) {
    case DataType::kFloat32:
      return TILEOPS_DYNAMIC_DISPATCH(ScoresF32)(q, groups, k, head_size, s, lds, next);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ScoresBF16)(q, groups, k, head_size, s, lds, next);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ScoresF16)(q, groups, k, head_size, s, lds, next);
    default:
      throw_internal_error("decode_scores", "dtype is not a float dtype");
  }
}

void decode_values(const float* p, std::int64_t ldp, const float* corr, std::int64_t groups,
                   const CacheRows& v, DataType dtype, std::int64_t head_size, float* o,
                   const PrefetchRows& next) {
  switch (dtype) {
    case DataType::kFloat32:
      return TILEOPS_DYNAMIC_DISPATCH(ValuesF32)(p, ldp, corr, groups, v, head_size, o, next);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ValuesBF16)(p, ldp, corr, groups, v, head_size, o, next);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ValuesF16)(p, ldp, corr, groups, v, head_size, o, next);
    default:
      throw_internal_error("decode_values", "dtype is not a float dtype");
  }
}

void decode_column_order(DataType dtype, const float* in, std::int64_t rows, std::int64_t head_size,
                         float* out, bool to_kernel) {
  switch (dtype) {
    case DataType::kFloat32:
      return TILEOPS_DYNAMIC_DISPATCH(ColumnOrderF32)(in, rows, head_size, out, to_kernel);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ColumnOrderBF16)(in, rows, head_size, out, to_kernel);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ColumnOrderF16)(in, rows, head_size, out, to_kernel);
    default:
      throw_internal_error("decode_column_order", "dtype is not a float dtype");
  }
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
