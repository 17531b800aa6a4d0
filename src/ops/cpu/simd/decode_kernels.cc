#include "src/ops/cpu/simd/decode_kernels.h"

#include <algorithm>
#include <cstddef>

#include "tileops/core/error.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/decode_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Lines of byte range [lo, hi) of rows [j0, j1) of `rows` (clamped to its n rows), for the
// memory system to fetch while the caller computes.
HWY_INLINE void Prefetch(const PrefetchRows& rows, std::int64_t j0, std::int64_t j1,
                         std::int64_t lo, std::int64_t hi) {
  const auto* base = static_cast<const char*>(rows.first);
  for (std::int64_t j = j0; j < std::min(j1, rows.n); ++j) {
    for (std::int64_t off = lo; off < hi; off += 64) {
      __builtin_prefetch(base + j * rows.stride + off, 0, 1);
    }
  }
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
void ScoresTile(const float* q, std::int64_t ldq, const typename R::T* k, std::int64_t ldk,
                std::int64_t n, std::int64_t head_size, float* s, std::int64_t lds,
                const PrefetchRows* next) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t dp = PairColumns<R>(head_size);
  const std::int64_t dv = head_size / lanes * lanes;
  constexpr int kA = (kK * kH + 3) / 4 * 4;
  for (std::int64_t j = 0; j < n; j += kK) {
    if (next != nullptr) Prefetch(*next, j, j + kK, 0, next->bytes + 63);
    const typename R::T* rows[kK];
    for (int i = 0; i < kK; ++i) rows[i] = k + std::min<std::int64_t>(j + i, n - 1) * ldk;
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

// Columns [c0, c0 + kC·Lanes) of kH output rows over all n value rows: each value vector is
// loaded (and widened) once for the kH rows. kPairs: the columns are whole blocks in pair order
// (PairColumns).
template <class R, int kH, int kC, bool kPairs = (R::kPairs && kC % 2 == 0)>
HWY_INLINE void ValuesTile(const float* p, std::int64_t ldp, const float* corr,
                           const typename R::T* v, std::int64_t ldv, std::int64_t n,
                           std::int64_t c0, float* o, std::int64_t ldo) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  VF acc[kH * kC];
  for (int h = 0; h < kH; ++h) {
    const VF f = hn::Set(d, corr[h]);
    for (int i = 0; i < kC; ++i)
      acc[h * kC + i] = hn::Mul(f, hn::LoadU(d, o + h * ldo + c0 + i * lanes));
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const typename R::T* row = v + j * ldv + c0;
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

// kH output rows, all columns: kC-vector tiles, then single vectors, then scalars. Before each
// kC tile, a share of the `next` rows is prefetched whole: a few prefetches in a burst cost far
// fewer instructions than a line per value row inside the tile's loop.
template <class R, int kH, int kC>
void ValuesRows(const float* p, std::int64_t ldp, const float* corr, const typename R::T* v,
                std::int64_t ldv, std::int64_t n, std::int64_t head_size, float* o,
                std::int64_t ldo, const PrefetchRows* next) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t tiles = head_size / (kC * lanes);
  std::int64_t c = 0;
  for (std::int64_t t = 0; t < tiles; ++t, c += kC * lanes) {
    if (next != nullptr) {
      Prefetch(*next, t * next->n / tiles, (t + 1) * next->n / tiles, 0, next->bytes + 63);
    }
    ValuesTile<R, kH, kC>(p, ldp, corr, v, ldv, n, c, o, ldo);
  }
  if (tiles == 0 && next != nullptr) Prefetch(*next, 0, next->n, 0, next->bytes + 63);
  for (; c < PairColumns<R>(head_size); c += 2 * lanes) {  // pair blocks past the last tile
    ValuesTile<R, kH, 2>(p, ldp, corr, v, ldv, n, c, o, ldo);
  }
  for (; c + lanes <= head_size; c += lanes) {
    ValuesTile<R, kH, 1>(p, ldp, corr, v, ldv, n, c, o, ldo);
  }
  for (; c < head_size; ++c) {
    for (int h = 0; h < kH; ++h) {
      float acc = corr[h] * o[h * ldo + c];
      for (std::int64_t j = 0; j < n; ++j) acc += p[h * ldp + j] * R::ToF32(v[j * ldv + c]);
      o[h * ldo + c] = acc;
    }
  }
}

// Query rows in tiles of four (the group of a kv head is usually 4 or 8), the rest in one
// smaller tile; only the first tile prefetches (the others read the same rows from L1).
template <class R>
void Scores(const float* q, std::int64_t groups, const void* k_bytes, std::int64_t ldk,
            std::int64_t n, std::int64_t head_size, float* s, std::int64_t lds,
            const PrefetchRows& next) {
  const auto* k = static_cast<const typename R::T*>(k_bytes);
  const PrefetchRows* pf = next.n > 0 ? &next : nullptr;
  std::int64_t g = 0;
  for (; g + 4 <= groups; g += 4, pf = nullptr) {
    ScoresTile<R, 2, 4>(q + g * head_size, head_size, k, ldk, n, head_size, s + g * lds, lds, pf);
  }
  const float* qg = q + g * head_size;
  switch (groups - g) {
    case 3:
      ScoresTile<R, 2, 3>(qg, head_size, k, ldk, n, head_size, s + g * lds, lds, pf);
      break;
    case 2:
      ScoresTile<R, 4, 2>(qg, head_size, k, ldk, n, head_size, s + g * lds, lds, pf);
      break;
    case 1:
      ScoresTile<R, 8, 1>(qg, head_size, k, ldk, n, head_size, s + g * lds, lds, pf);
      break;
    default:
      break;
  }
  if (pf != nullptr) Prefetch(next, n, next.n, 0, next.bytes + 63);
}

template <class R>
void Values(const float* p, std::int64_t ldp, const float* corr, std::int64_t groups,
            const void* v_bytes, std::int64_t ldv, std::int64_t n, std::int64_t head_size, float* o,
            const PrefetchRows& next) {
  const auto* v = static_cast<const typename R::T*>(v_bytes);
  const PrefetchRows* pf = next.n > 0 ? &next : nullptr;
  std::int64_t g = 0;
  for (; g + 4 <= groups; g += 4, pf = nullptr) {
    ValuesRows<R, 4, 2>(p + g * ldp, ldp, corr + g, v, ldv, n, head_size, o + g * head_size,
                        head_size, pf);
  }
  const float* pg = p + g * ldp;
  float* og = o + g * head_size;
  switch (groups - g) {
    case 3:
      ValuesRows<R, 3, 2>(pg, ldp, corr + g, v, ldv, n, head_size, og, head_size, pf);
      break;
    case 2:
      ValuesRows<R, 2, 4>(pg, ldp, corr + g, v, ldv, n, head_size, og, head_size, pf);
      break;
    case 1:
      ValuesRows<R, 1, 8>(pg, ldp, corr + g, v, ldv, n, head_size, og, head_size, pf);
      break;
    default:
      break;
  }
  if (pf != nullptr) Prefetch(next, n, next.n, 0, next.bytes + 63);
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
  void Scores##NAME(const float* q, std::int64_t groups, const void* k, std::int64_t ldk,        \
                    std::int64_t n, std::int64_t head_size, float* s, std::int64_t lds,          \
                    const PrefetchRows& next) {                                                  \
    Scores<R>(q, groups, k, ldk, n, head_size, s, lds, next);                                    \
  }                                                                                              \
  void Values##NAME(const float* p, std::int64_t ldp, const float* corr, std::int64_t groups,    \
                    const void* v, std::int64_t ldv, std::int64_t n, std::int64_t head_size,     \
                    float* o, const PrefetchRows& next) {                                        \
    Values<R>(p, ldp, corr, groups, v, ldv, n, head_size, o, next);                              \
  }                                                                                              \
  void ColumnOrder##NAME(const float* in, std::int64_t rows, std::int64_t head_size, float* out, \
                         bool to_kernel) {                                                       \
    ColumnOrder<R>(in, rows, head_size, out, to_kernel);                                         \
  }
TILEOPS_DECODE_KERNELS(F32, F32Rows)
TILEOPS_DECODE_KERNELS(BF16, BF16Rows)
TILEOPS_DECODE_KERNELS(F16, F16Rows)
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

void decode_scores(const float* q, std::int64_t groups, const void* k, DataType dtype,
                   std::int64_t ldk, std::int64_t n, std::int64_t head_size, float* s,
                   std::int64_t lds, const PrefetchRows& next) {
  switch (dtype) {
    case DataType::kFloat32:
      return HWY_DYNAMIC_DISPATCH(ScoresF32)(q, groups, k, ldk, n, head_size, s, lds, next);
    case DataType::kBFloat16:
      return HWY_DYNAMIC_DISPATCH(ScoresBF16)(q, groups, k, ldk, n, head_size, s, lds, next);
    case DataType::kFloat16:
      return HWY_DYNAMIC_DISPATCH(ScoresF16)(q, groups, k, ldk, n, head_size, s, lds, next);
    default:
      throw_internal_error("decode_scores", "dtype is not a float dtype");
  }
}

void decode_values(const float* p, std::int64_t ldp, const float* corr, std::int64_t groups,
                   const void* v, DataType dtype, std::int64_t ldv, std::int64_t n,
                   std::int64_t head_size, float* o, const PrefetchRows& next) {
  switch (dtype) {
    case DataType::kFloat32:
      return HWY_DYNAMIC_DISPATCH(ValuesF32)(p, ldp, corr, groups, v, ldv, n, head_size, o, next);
    case DataType::kBFloat16:
      return HWY_DYNAMIC_DISPATCH(ValuesBF16)(p, ldp, corr, groups, v, ldv, n, head_size, o, next);
    case DataType::kFloat16:
      return HWY_DYNAMIC_DISPATCH(ValuesF16)(p, ldp, corr, groups, v, ldv, n, head_size, o, next);
    default:
      throw_internal_error("decode_values", "dtype is not a float dtype");
  }
}

void decode_column_order(DataType dtype, const float* in, std::int64_t rows, std::int64_t head_size,
                         float* out, bool to_kernel) {
  switch (dtype) {
    case DataType::kFloat32:
      return HWY_DYNAMIC_DISPATCH(ColumnOrderF32)(in, rows, head_size, out, to_kernel);
    case DataType::kBFloat16:
      return HWY_DYNAMIC_DISPATCH(ColumnOrderBF16)(in, rows, head_size, out, to_kernel);
    case DataType::kFloat16:
      return HWY_DYNAMIC_DISPATCH(ColumnOrderF16)(in, rows, head_size, out, to_kernel);
    default:
      throw_internal_error("decode_column_order", "dtype is not a float dtype");
  }
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
