#include "src/ops/cpu/simd/rotary_kernels.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/rotary_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using E = F32Elem;

void RotateHalves(const float* x, const float* c, const float* s, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const std::int64_t half = n / 2;
  // Both halves are read before either is written, so out may be x.
  ForEachVector(d, 0, half, [&](std::int64_t i, auto part) {
    const auto a = Load<E>(d, x + i, part);
    const auto b = Load<E>(d, x + half + i, part);
    const auto lo = hn::MulAdd(b, Load<E>(d, s + i, part), hn::Mul(a, Load<E>(d, c + i, part)));
    const auto hi =
        hn::MulAdd(a, Load<E>(d, s + half + i, part), hn::Mul(b, Load<E>(d, c + half + i, part)));
    Store<E>(d, lo, out + i, part);
    Store<E>(d, hi, out + half + i, part);
  });
}

void RotatePairs(const float* x, const float* c, const float* s, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  if (hn::Lanes(d) < 2) {
    for (std::int64_t i = 0; i + 1 < n; i += 2) {
      const float a = x[i];
      const float b = x[i + 1];
      out[i] = a * c[i] + b * s[i];
      out[i + 1] = b * c[i + 1] + a * s[i + 1];
    }
    return;
  }
  // Vectors of an even lane count hold whole pairs (n is even, so a partial one too); Reverse2
  // swaps each pair's lanes.
  ForEachVector(d, 0, n, [&](std::int64_t i, auto part) {
    const auto v = Load<E>(d, x + i, part);
    const auto r = hn::MulAdd(hn::Reverse2(d, v), Load<E>(d, s + i, part),
                              hn::Mul(v, Load<E>(d, c + i, part)));
    Store<E>(d, r, out + i, part);
  });
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
