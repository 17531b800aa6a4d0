#include "src/ops/cpu/simd/norm_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/norm_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

float SumOfSquares(const float* x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  auto a2 = hn::Zero(d);
  auto a3 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    const auto v0 = hn::LoadU(d, x + i);
    const auto v1 = hn::LoadU(d, x + i + lanes);
    const auto v2 = hn::LoadU(d, x + i + 2 * lanes);
    const auto v3 = hn::LoadU(d, x + i + 3 * lanes);
    a0 = hn::MulAdd(v0, v0, a0);
    a1 = hn::MulAdd(v1, v1, a1);
    a2 = hn::MulAdd(v2, v2, a2);
    a3 = hn::MulAdd(v3, v3, a3);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    a0 = hn::MulAdd(v, v, a0);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) sum += x[i] * x[i];
  return sum;
}

void AddRows(const float* a, const float* b, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

void ScaleByWeight(const float* x, const float* w, float scale, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + i), s), hn::LoadU(d, w + i)), d, out + i);
  }
  for (; i < n; ++i) out[i] = x[i] * scale * w[i];
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(SumOfSquares);
HWY_EXPORT(AddRows);
HWY_EXPORT(ScaleByWeight);

float sum_of_squares(const float* x, std::int64_t n) {
  return HWY_DYNAMIC_DISPATCH(SumOfSquares)(x, n);
}

void add_rows(const float* a, const float* b, std::int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(AddRows)(a, b, n, out);
}

void scale_by_weight(const float* x, const float* w, float scale, std::int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ScaleByWeight)(x, w, scale, n, out);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
