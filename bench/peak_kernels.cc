#include "bench/peak_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Ten independent accumulators cover FMA latency (4-5 cycles) × 2 pipes.
double FmaPeak(std::int64_t iterations, float* sink) {
  const hn::ScalableTag<float> d;
  const auto x = hn::Set(d, 0.999f), y = hn::Set(d, 1e-7f);
  auto a0 = hn::Set(d, 1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0;
  auto a5 = a0, a6 = a0, a7 = a0, a8 = a0, a9 = a0;
  for (std::int64_t i = 0; i < iterations; ++i) {
    a0 = hn::MulAdd(a0, x, y), a1 = hn::MulAdd(a1, x, y), a2 = hn::MulAdd(a2, x, y);
    a3 = hn::MulAdd(a3, x, y), a4 = hn::MulAdd(a4, x, y), a5 = hn::MulAdd(a5, x, y);
    a6 = hn::MulAdd(a6, x, y), a7 = hn::MulAdd(a7, x, y), a8 = hn::MulAdd(a8, x, y);
    a9 = hn::MulAdd(a9, x, y);
  }
  const auto sum = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)),
                           hn::Add(hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)), hn::Add(a8, a9)));
  *sink = hn::GetLane(sum);
  return 10.0 * 2.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iterations);
}

double Bf16Peak(std::int64_t iterations, float* sink) {
#if HWY_TARGET == HWY_SCALAR
  (void)iterations;
  *sink = 0.0f;
  return 0.0;  // no bfloat16 pairs in one lane
#else
  const hn::ScalableTag<float> df;
  const hn::Repartition<hwy::bfloat16_t, decltype(df)> dbf;
  const hn::Repartition<std::uint16_t, decltype(df)> du16;
  const auto a = hn::BitCast(dbf, hn::Set(du16, std::uint16_t{0x3f7f}));  // 0.996
  const auto b = hn::BitCast(dbf, hn::Set(du16, std::uint16_t{0x3a83}));  // 0.001
  auto s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  auto t0 = hn::Zero(df), t1 = t0, t2 = t0, t3 = t0, t4 = t0, t5 = t0, t6 = t0, t7 = t0;
  for (std::int64_t i = 0; i < iterations; ++i) {
    s0 = hn::ReorderWidenMulAccumulate(df, a, b, s0, t0);
    s1 = hn::ReorderWidenMulAccumulate(df, a, b, s1, t1);
    s2 = hn::ReorderWidenMulAccumulate(df, a, b, s2, t2);
    s3 = hn::ReorderWidenMulAccumulate(df, a, b, s3, t3);
    s4 = hn::ReorderWidenMulAccumulate(df, a, b, s4, t4);
    s5 = hn::ReorderWidenMulAccumulate(df, a, b, s5, t5);
    s6 = hn::ReorderWidenMulAccumulate(df, a, b, s6, t6);
    s7 = hn::ReorderWidenMulAccumulate(df, a, b, s7, t7);
  }
  auto sum = hn::Add(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)),
                     hn::Add(hn::Add(s4, s5), hn::Add(s6, s7)));
  sum = hn::Add(sum, hn::Add(hn::Add(hn::Add(t0, t1), hn::Add(t2, t3)),
                             hn::Add(hn::Add(t4, t5), hn::Add(t6, t7))));
  *sink = hn::GetLane(sum);
  return 8.0 * 2.0 * static_cast<double>(hn::Lanes(dbf)) * static_cast<double>(iterations);
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::bench {

HWY_EXPORT(FmaPeak);
HWY_EXPORT(Bf16Peak);

double fma_peak_flops(std::int64_t iterations, float* sink) {
  return HWY_DYNAMIC_DISPATCH(FmaPeak)(iterations, sink);
}

double bf16_peak_flops(std::int64_t iterations, float* sink) {
  return HWY_DYNAMIC_DISPATCH(Bf16Peak)(iterations, sink);
}

}  // namespace tileops::bench
#endif  // HWY_ONCE
