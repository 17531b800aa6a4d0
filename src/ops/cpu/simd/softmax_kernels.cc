// Highway kernels of the softmax operators, compiled once per SIMD target and dispatched at run
// time. Tails are partial vectors (rows-inl.h), so every element sees the same vector Exp.
#include "src/ops/cpu/simd/softmax_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/ops/cpu/streaming.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/softmax_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Exp; per-target header, so it must follow highway.h inside the foreach_target pass.
#include "hwy/contrib/math/math-inl.h"
#include "src/ops/cpu/simd/fast_exp-inl.h"
#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using E = F32Elem;

void ExpRow(const float* x, std::int64_t n, float* out) {
  const DF d;
  ForEachVector(d, 0, n, [&](std::int64_t i, auto part) {
    Store<E>(d, hn::Exp(d, Load<E>(d, x + i, part)), out + i, part);
  });
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
  const auto lowest = hn::Set(d, -std::numeric_limits<float>::infinity());
  ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
    const auto y = Valid(d, hn::Mul(Load<E>(d, x + j, part), s), part, lowest);
    nan = hn::Or(nan, hn::IsNaN(y));
    m0 = hn::Max(m0, y);
  });
  if (!hn::AllFalse(d, nan)) return std::numeric_limits<float>::quiet_NaN();
  return hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
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
  const auto lowest = hn::Set(d, -std::numeric_limits<float>::infinity());
  ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
    m0 = hn::Max(m0, Valid(d, hn::Mul(Load<E>(d, x + j, part), s), part, lowest));
  });
  return hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
}

// e^(x·scale − shift) of each element into out; returns their sum.
HWY_INLINE float ScaledExpSumImpl(const float* x, float scale, float shift, std::int64_t n,
                                  float* out, const void* next, std::int64_t next_bytes) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  const auto m = hn::Set(d, shift);
  const auto exp = [&](hn::Vec<DF> v) { return ExpNonPositive(d, hn::MulSub(v, s, m)); };
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
  ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
    // The padding lanes of a partial vector must add nothing to the sum.
    const auto e = Valid(d, exp(Load<E>(d, x + j, part)), part, hn::Zero(d));
    Store<E>(d, e, out + j, part);
    a0 = hn::Add(a0, e);
  });
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
}

float ScaledExpSum(const float* x, float scale, float shift, std::int64_t n, float* out,
                   const void* next, std::int64_t next_bytes) {
  return ScaledExpSumImpl(x, scale, shift, n, out, next, next_bytes);
}

HWY_INLINE void ScaleRowImpl(const float* x, float factor, std::int64_t n, float* out,
                             bool stream) {
  const DF d;
  const auto f = hn::Set(d, factor);
  ForEachVector(d, 0, n, [&](std::int64_t i, auto part) {
    Store<E>(d, hn::Mul(Load<E>(d, x + i, part), f), out + i, part, stream);
  });
  if (stream) end_streaming_stores();
}

void ScaleRow(const float* x, float factor, std::int64_t n, float* out) {
  ScaleRowImpl(x, factor, n, out, false);
}

void ExpNonPositiveRow(const float* x, std::int64_t n, float* out) {
  const DF d;
  ForEachVector(d, 0, n, [&](std::int64_t i, auto part) {
    Store<E>(d, ExpNonPositive(d, Load<E>(d, x + i, part)), out + i, part);
  });
}

// The exp pass of a row whose max is m; returns 1 / Σ e, or NaN when the row holds a NaN or
// +inf or is all -inf (out is then filled with NaN).
HWY_INLINE float ExpPass(const float* x, float scale, float m, std::int64_t n, float* out,
                         const void* next, std::int64_t next_bytes) {
  if (!std::isfinite(m)) {
    std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    return std::numeric_limits<float>::quiet_NaN();
  }
  // The max entry contributes e^0 = 1, so sum >= 1 unless a NaN made it NaN.
  const float sum = ScaledExpSumImpl(x, scale, m, n, out, next, next_bytes);
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

void exp_non_positive_row(const float* x, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(ExpNonPositiveRow)(x, n, out);
}

void exp_row(const float* x, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(ExpRow)(x, n, out);
}

float scaled_max(const float* x, float scale, std::int64_t n) {
  return TILEOPS_DYNAMIC_DISPATCH(ScaledMax)(x, scale, n);
}

float scaled_exp_sum(const float* x, float scale, float shift, std::int64_t n, float* out,
                     const void* next, std::int64_t next_bytes) {
  return TILEOPS_DYNAMIC_DISPATCH(ScaledExpSum)(x, scale, shift, n, out, next, next_bytes);
}

void scale_row(const float* x, float factor, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(ScaleRow)(x, factor, n, out);
}

void softmax_row(const float* x, float scale, std::int64_t n, float* out, const void* next,
                 std::int64_t next_bytes, bool stream) {
  TILEOPS_DYNAMIC_DISPATCH(SoftmaxRow)(x, scale, n, out, next, next_bytes, stream);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
