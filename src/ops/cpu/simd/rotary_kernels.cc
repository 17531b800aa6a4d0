#include "src/ops/cpu/simd/rotary_kernels.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/rotary_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void RotateHalves(const float* x, const float* c, const float* s, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t half = n / 2;
  std::int64_t i = 0;
  // Both halves are read before either is written, so out may be x.
  for (; i + lanes <= half; i += lanes) {
    const auto a = hn::LoadU(d, x + i);
    const auto b = hn::LoadU(d, x + half + i);
    const auto lo = hn::MulAdd(b, hn::LoadU(d, s + i), hn::Mul(a, hn::LoadU(d, c + i)));
    const auto hi =
        hn::MulAdd(a, hn::LoadU(d, s + half + i), hn::Mul(b, hn::LoadU(d, c + half + i)));
    hn::StoreU(lo, d, out + i);
    hn::StoreU(hi, d, out + half + i);
  }
  for (; i < half; ++i) {
    const float a = x[i];
    const float b = x[half + i];
    out[i] = a * c[i] + b * s[i];
    out[half + i] = b * c[half + i] + a * s[half + i];
  }
}

void RotatePairs(const float* x, const float* c, const float* s, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  // Vectors of an even lane count hold whole pairs; Reverse2 swaps each pair's lanes.
  if (lanes >= 2) {
    for (; i + lanes <= n; i += lanes) {
      const auto v = hn::LoadU(d, x + i);
      const auto r =
          hn::MulAdd(hn::Reverse2(d, v), hn::LoadU(d, s + i), hn::Mul(v, hn::LoadU(d, c + i)));
      hn::StoreU(r, d, out + i);
    }
  }
  for (; i + 1 < n; i += 2) {
    const float a = x[i];
    const float b = x[i + 1];
    out[i] = a * c[i] + b * s[i];
    out[i + 1] = b * c[i + 1] + a * s[i + 1];
  }
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(RotateHalves);
HWY_EXPORT(RotatePairs);

void rotate_halves(const float* x, const float* c, const float* s, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(RotateHalves)(x, c, s, n, out);
}

void rotate_pairs(const float* x, const float* c, const float* s, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(RotatePairs)(x, c, s, n, out);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
