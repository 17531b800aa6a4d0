// Highway kernels of the softmax operators, compiled once per SIMD target and dispatched at run
// time. Tails go through a one-vector buffer so every element sees the same vector Exp.
#include "src/ops/cpu/simd/softmax_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "src/ops/cpu/streaming.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/softmax_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Exp; per-target header, so it must follow highway.h inside the foreach_target pass.
#include "hwy/contrib/math/math-inl.h"
#include "src/ops/cpu/simd/convert-inl.h"
#include "src/ops/cpu/simd/fast_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

void ExpRow(const float* x, std::int64_t n, float* out) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Exp(d, hn::LoadU(d, x + i)), d, out + i);
  if (i == n) return;
  HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
  std::copy(x + i, x + n, buf);
  hn::Store(hn::Exp(d, hn::Load(d, buf)), d, buf);
  std::copy(buf, buf + (n - i), out + i);
}

float ScaledMax(const float* x, float scale, std::int64_t n) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  auto m0 = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m1 = m0;
  // x86 max ignores a NaN operand, so NaNs are tracked on the side.
  auto nan = hn::FirstN(d, 0);
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto y0 = hn::Mul(hn::LoadU(d, x + i), s);
    const auto y1 = hn::Mul(hn::LoadU(d, x + i + lanes), s);
    nan = hn::Or(nan, hn::Or(hn::IsNaN(y0), hn::IsNaN(y1)));
    m0 = hn::Max(m0, y0);
    m1 = hn::Max(m1, y1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto y = hn::Mul(hn::LoadU(d, x + i), s);
    nan = hn::Or(nan, hn::IsNaN(y));
    m0 = hn::Max(m0, y);
  }
  if (!hn::AllFalse(d, nan)) return std::numeric_limits<float>::quiet_NaN();
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  for (; i < n; ++i) {
    const float y = x[i] * scale;
    if (std::isnan(y)) return y;
    m = std::max(m, y);
  }
  return m;
}

// ScaledMax without its NaN tracking (x86 max may drop a NaN), for the row softmax, where a
// NaN still makes the exp pass's sum NaN, checked once per row.
HWY_INLINE float ScaledMaxOfNumbers(const float* x, float scale, std::int64_t n) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  auto m0 = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m1 = m0;
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    m0 = hn::Max(m0, hn::Mul(hn::LoadU(d, x + i), s));
    m1 = hn::Max(m1, hn::Mul(hn::LoadU(d, x + i + lanes), s));
  }
  for (; i + lanes <= n; i += lanes) m0 = hn::Max(m0, hn::Mul(hn::LoadU(d, x + i), s));
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  for (; i < n; ++i) m = std::max(m, x[i] * scale);
  return m;
}

// e^(x·scale − shift) of each element into out; returns their sum. kCoarse (for 16-bit
// outputs): computed as 2^((x·scale − shift)·log2 e) by Exp2Coarse.
template <bool kCoarse>
HWY_INLINE float ScaledExpSumImpl(const float* x, float scale, float shift, std::int64_t n,
                                  float* out, const void* next, std::int64_t next_bytes) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const float unit = kCoarse ? 1.44269504088896341f : 1.0f;
  const auto s = hn::Set(d, scale * unit);
  const auto m = hn::Set(d, shift * unit);
  const auto exp = [&](hn::Vec<DF> v) {
    if constexpr (kCoarse) {
      return Exp2CoarseNonPositive(d, hn::MulSub(v, s, m));
    } else {
      return ExpNonPositive(d, hn::MulSub(v, s, m));
    }
  };
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  // One prefetch per cache line of this row consumed: the next row arrives at the pace of this
  // one. L2 (locality 2), as this row, its output and the next one may not all fit in L1.
  const char* ahead = static_cast<const char*>(next);
  const char* ahead_end = ahead + (next == nullptr ? 0 : next_bytes);
  constexpr std::int64_t kLine = 64;
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    for (std::int64_t b = 0; b < 2 * lanes * std::int64_t{sizeof(float)} && ahead < ahead_end;
         b += kLine, ahead += kLine) {
      __builtin_prefetch(ahead, 0, 2);
    }
    const auto e0 = exp(hn::LoadU(d, x + i));
    const auto e1 = exp(hn::LoadU(d, x + i + lanes));
    hn::StoreU(e0, d, out + i);
    hn::StoreU(e1, d, out + i + lanes);
    a0 = hn::Add(a0, e0);
    a1 = hn::Add(a1, e1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e = exp(hn::LoadU(d, x + i));
    hn::StoreU(e, d, out + i);
    a0 = hn::Add(a0, e);
  }
  if (i < n) {
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    std::copy(x + i, x + n, buf);
    // The padding lanes must add nothing to the sum.
    const auto e =
        hn::IfThenElseZero(hn::FirstN(d, static_cast<std::size_t>(n - i)), exp(hn::Load(d, buf)));
    hn::Store(e, d, buf);
    std::copy(buf, buf + (n - i), out + i);
    a1 = hn::Add(a1, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
}

float ScaledExpSum(const float* x, float scale, float shift, std::int64_t n, float* out,
                   const void* next, std::int64_t next_bytes) {
  return ScaledExpSumImpl<false>(x, scale, shift, n, out, next, next_bytes);
}

HWY_INLINE void ScaleRowImpl(const float* x, float factor, std::int64_t n, float* out,
                             bool stream) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto f = hn::Set(d, factor);
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    StoreMaybeStreaming(hn::Mul(hn::LoadU(d, x + i), f), d, out + i, stream);
  }
  if (stream) end_streaming_stores();
  for (; i < n; ++i) out[i] = x[i] * factor;
}

void ScaleRow(const float* x, float factor, std::int64_t n, float* out) {
  ScaleRowImpl(x, factor, n, out, false);
}

void ExpNonPositiveRow(const float* x, std::int64_t n, float* out) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(ExpNonPositive(d, hn::LoadU(d, x + i)), d, out + i);
  }
  if (i == n) return;
  HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
  std::copy(x + i, x + n, buf);
  hn::Store(ExpNonPositive(d, hn::Load(d, buf)), d, buf);
  std::copy(buf, buf + (n - i), out + i);
}

// The exp pass of a row whose max is m; returns 1 / Σ e, or NaN when the row holds a NaN or
// +inf or is all -inf (out is then filled with NaN).
template <bool kCoarse = false>
HWY_INLINE float ExpPass(const float* x, float scale, float m, std::int64_t n, float* out,
                         const void* next, std::int64_t next_bytes) {
  if (!std::isfinite(m)) {
    std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    return std::numeric_limits<float>::quiet_NaN();
  }
  // The max entry contributes e^0 = 1, so sum >= 1 unless a NaN made it NaN.
  const float sum = ScaledExpSumImpl<kCoarse>(x, scale, m, n, out, next, next_bytes);
  if (std::isnan(sum)) {
    std::fill(out, out + n, sum);
    return sum;
  }
  return 1.0f / sum;  // one division per row, none per element
}

void SoftmaxRow(const float* x, float scale, std::int64_t n, float* out, const void* next,
                std::int64_t next_bytes, bool stream) {
  const float m = ScaledMaxOfNumbers(x, scale, n);
  const float factor = ExpPass(x, scale, m, n, out, next, next_bytes);
  if (!std::isnan(factor)) ScaleRowImpl(out, factor, n, out, stream);
}

// ExpPass<true> for a bfloat16 row: its first `blocks` elements are widened from x again (two
// shifts per pair of vectors, cheaper than a float32 round trip through scratch) into scratch's
// [even | odd] block layout; the rest are already float32 in scratch.
HWY_INLINE float ExpPassBF16(const std::uint16_t* x, std::int64_t blocks, float scale, float m,
                             std::int64_t n, float* scratch, const void* next,
                             std::int64_t next_bytes) {
  if (!std::isfinite(m)) {
    std::fill(scratch, scratch + n, std::numeric_limits<float>::quiet_NaN());
    return std::numeric_limits<float>::quiet_NaN();
  }
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale * 1.44269504088896341f);
  const auto shift = hn::Set(d, m * 1.44269504088896341f);
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  const char* ahead = static_cast<const char*>(next);
  const char* ahead_end = ahead + (next == nullptr ? 0 : next_bytes);
  constexpr std::int64_t kLine = 64;
  for (std::int64_t i = 0; i < blocks; i += 2 * lanes) {
    // A line of the next row per line of this one (2·Lanes bfloat16 <= 64 bytes).
    if (ahead < ahead_end && (i * 2) % kLine == 0) {
      __builtin_prefetch(ahead, 0, 2);
      ahead += kLine;
    }
    hn::Vec<DF> v0, v1;
    LoadBF16PairsAsF32(d, x + i, v0, v1);
    const auto e0 = Exp2CoarseNonPositive(d, hn::MulSub(v0, s, shift));
    const auto e1 = Exp2CoarseNonPositive(d, hn::MulSub(v1, s, shift));
    hn::StoreU(e0, d, scratch + i);
    hn::StoreU(e1, d, scratch + i + lanes);
    a0 = hn::Add(a0, e0);
    a1 = hn::Add(a1, e1);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  if (blocks < n) {
    sum += ScaledExpSumImpl<true>(scratch + blocks, scale, m, n - blocks, scratch + blocks, nullptr,
                                  0);
  }
  if (std::isnan(sum)) {
    std::fill(scratch, scratch + n, sum);
    return sum;
  }
  return 1.0f / sum;
}

// StoreF32PairsAsBF16 for values known not to be NaN (softmax outputs in [0, 1]): the same
// round to nearest even, without the NaN select.
template <class D>
HWY_INLINE void StoreProbabilityPairsAsBF16(D, hn::Vec<D> even, hn::Vec<D> odd, std::uint16_t* p,
                                            bool stream) {
  const hn::Rebind<std::uint32_t, D> du32;
  const auto round = [&](hn::Vec<D> v) {
    const auto u = hn::BitCast(du32, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
    return hn::Add(u, hn::Add(hn::Set(du32, 0x7fffu), lsb));
  };
  const auto low = hn::ShiftRight<16>(round(even));
  const auto high = hn::And(round(odd), hn::Set(du32, 0xffff0000u));
  StoreMaybeStreaming(hn::Or(low, high), du32, reinterpret_cast<std::uint32_t*>(p), stream);
}

// Softmax of a contiguous float16/bfloat16 row in three passes: load, widen and max into
// float32 scratch; exp and sum in place; scale, round and store. bfloat16 pairs are split in
// place (see convert-inl.h), so whole blocks of 2·Lanes sit in scratch as [even | odd] halves:
// the order is undone by the last pass, and max and sum do not care about it.
template <typename T>
void SoftmaxRow16(const void* x_ptr, float scale, std::int64_t n, float* scratch, void* out_ptr,
                  const void* next, std::int64_t next_bytes, bool stream) {
  constexpr bool kBF16 = std::is_same_v<T, hwy::bfloat16_t>;
  const auto* x = static_cast<const std::uint16_t*>(x_ptr);
  auto* out = static_cast<std::uint16_t*>(out_ptr);
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  auto m0 = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m1 = m0;
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    hn::Vec<DF> v0, v1;
    if constexpr (kBF16) {
      LoadBF16PairsAsF32(d, x + i, v0, v1);
    } else {
      v0 = LoadF16AsF32(d, x + i);
      v1 = LoadF16AsF32(d, x + i + lanes);
    }
    if constexpr (!kBF16) {  // bfloat16 blocks are widened again by the exp pass instead
      hn::StoreU(v0, d, scratch + i);
      hn::StoreU(v1, d, scratch + i + lanes);
    }
    m0 = hn::Max(m0, hn::Mul(v0, s));
    m1 = hn::Max(m1, hn::Mul(v1, s));
  }
  const std::int64_t blocks_end = i;
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  for (; i < n; ++i) {
    scratch[i] = kBF16 ? bfloat16_to_float(x[i]) : float16_to_float(x[i]);
    m = std::max(m, scratch[i] * scale);
  }

  float factor;
  if constexpr (kBF16) {
    factor = ExpPassBF16(x, blocks_end, scale, m, n, scratch, next, next_bytes);
  } else {
    factor = ExpPass<true>(scratch, scale, m, n, scratch, next, next_bytes);
  }
  if (std::isnan(factor)) {
    std::fill(out, out + n, kBF16 ? float_to_bfloat16(factor) : float_to_float16(factor));
    return;
  }
  const auto f = hn::Set(d, factor);
  for (i = 0; i < blocks_end; i += 2 * lanes) {
    const auto v0 = hn::Mul(hn::LoadU(d, scratch + i), f);
    const auto v1 = hn::Mul(hn::LoadU(d, scratch + i + lanes), f);
    if constexpr (kBF16) {
      StoreProbabilityPairsAsBF16(d, v0, v1, out + i, stream);
    } else {
      StoreF32AsF16(d, v0, out + i, stream);
      StoreF32AsF16(d, v1, out + i + lanes, stream);
    }
  }
  if (stream) end_streaming_stores();
  for (; i < n; ++i) {
    const float y = scratch[i] * factor;
    out[i] = kBF16 ? float_to_bfloat16(y) : float_to_float16(y);
  }
}

void SoftmaxRowBF16(const void* x, float scale, std::int64_t n, float* scratch, void* out,
                    const void* next, std::int64_t next_bytes, bool stream) {
  SoftmaxRow16<hwy::bfloat16_t>(x, scale, n, scratch, out, next, next_bytes, stream);
}
void SoftmaxRowF16(const void* x, float scale, std::int64_t n, float* scratch, void* out,
                   const void* next, std::int64_t next_bytes, bool stream) {
  SoftmaxRow16<hwy::float16_t>(x, scale, n, scratch, out, next, next_bytes, stream);
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(ExpRow);
HWY_EXPORT(ScaledMax);
HWY_EXPORT(ScaledExpSum);
HWY_EXPORT(ScaleRow);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(ExpNonPositiveRow);
HWY_EXPORT(SoftmaxRowBF16);
HWY_EXPORT(SoftmaxRowF16);

void exp_non_positive_row(const float* x, std::int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ExpNonPositiveRow)(x, n, out);
}

void softmax_row_16(DataType dtype, const void* x, float scale, std::int64_t n, float* scratch,
                    void* out, const void* next, std::int64_t next_bytes, bool stream) {
  switch (dtype) {
    case DataType::kBFloat16:
      return HWY_DYNAMIC_DISPATCH(SoftmaxRowBF16)(x, scale, n, scratch, out, next, next_bytes,
                                                  stream);
    case DataType::kFloat16:
      return HWY_DYNAMIC_DISPATCH(SoftmaxRowF16)(x, scale, n, scratch, out, next, next_bytes,
                                                 stream);
    default:
      throw_internal_error("softmax_row_16", "dtype is not float16/bfloat16");
  }
}

void exp_row(const float* x, std::int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ExpRow)(x, n, out);
}

float scaled_max(const float* x, float scale, std::int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ScaledMax)(x, scale, n);
}

float scaled_exp_sum(const float* x, float scale, float shift, std::int64_t n, float* out,
                     const void* next, std::int64_t next_bytes) {
  return HWY_DYNAMIC_DISPATCH(ScaledExpSum)(x, scale, shift, n, out, next, next_bytes);
}

void scale_row(const float* x, float factor, std::int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ScaleRow)(x, factor, n, out);
}

void softmax_row(const float* x, float scale, std::int64_t n, float* out, const void* next,
                 std::int64_t next_bytes, bool stream) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRow)(x, scale, n, out, next, next_bytes, stream);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
