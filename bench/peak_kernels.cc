#include "bench/peak_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peak_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Twelve independent accumulators (distinct, so none are merged; as many as the GEMM
// micro-kernel) cover FMA latency × 2 pipes with room for scheduling hiccups.
double FmaPeak(std::int64_t iterations, float* sink) {
  const hn::ScalableTag<float> d;
  const auto x = hn::Set(d, 0.999f), y = hn::Set(d, 1e-7f);
  auto a0 = hn::Set(d, 1.0f), a1 = hn::Set(d, 1.1f), a2 = hn::Set(d, 1.2f);
  auto a3 = hn::Set(d, 1.3f), a4 = hn::Set(d, 1.4f), a5 = hn::Set(d, 1.5f);
  auto a6 = hn::Set(d, 1.6f), a7 = hn::Set(d, 1.7f), a8 = hn::Set(d, 1.8f);
  auto a9 = hn::Set(d, 1.9f), a10 = hn::Set(d, 2.0f), a11 = hn::Set(d, 2.1f);
  for (std::int64_t i = 0; i < iterations; ++i) {
    a0 = hn::MulAdd(a0, x, y), a1 = hn::MulAdd(a1, x, y), a2 = hn::MulAdd(a2, x, y);
    a3 = hn::MulAdd(a3, x, y), a4 = hn::MulAdd(a4, x, y), a5 = hn::MulAdd(a5, x, y);
    a6 = hn::MulAdd(a6, x, y), a7 = hn::MulAdd(a7, x, y), a8 = hn::MulAdd(a8, x, y);
    a9 = hn::MulAdd(a9, x, y), a10 = hn::MulAdd(a10, x, y), a11 = hn::MulAdd(a11, x, y);
  }
  const auto sum = hn::Add(
      hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7))),
      hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)));
  *sink = hn::GetLane(sum);
  return 12.0 * 2.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iterations);
}

// Like a bfloat16 GEMM micro-kernel: two broadcast-like A operands kept in registers, two B
// vectors loaded (from L1) and widened every step, four independent accumulator pairs.
double Bf16Peak(std::int64_t iterations, float* sink) {
#if HWY_TARGET == HWY_SCALAR
  (void)iterations;
  *sink = 0.0f;
  return 0.0;  // no bfloat16 pairs in one lane
#else
  const hn::ScalableTag<float> df;
  const hn::Repartition<hwy::bfloat16_t, decltype(df)> dbf;
  const hn::Repartition<std::uint16_t, decltype(df)> du16;
  constexpr std::size_t kBuf = 16 * hn::MaxLanes(decltype(dbf)());
  HWY_ALIGN hwy::bfloat16_t buf[kBuf];
  for (std::size_t i = 0; i < kBuf; ++i) buf[i].bits = static_cast<std::uint16_t>(0x3a83 + (i & 7));
  const std::size_t lanes = hn::Lanes(dbf);
  const auto a0 = hn::BitCast(dbf, hn::Set(du16, std::uint16_t{0x3f7f}));
  const auto a1 = hn::BitCast(dbf, hn::Set(du16, std::uint16_t{0x3f7e}));
  auto s0 = hn::Set(df, 0.1f), s1 = hn::Set(df, 0.2f), s2 = hn::Set(df, 0.3f);
  auto s3 = hn::Set(df, 0.4f);
  auto t0 = hn::Set(df, 0.5f), t1 = hn::Set(df, 0.6f), t2 = hn::Set(df, 0.7f);
  auto t3 = hn::Set(df, 0.8f);
  for (std::int64_t i = 0; i < iterations; ++i) {
    const std::size_t off = (static_cast<std::size_t>(i) & 7) * 2 * lanes;
    const auto b0 = hn::Load(dbf, buf + off);
    const auto b1 = hn::Load(dbf, buf + off + lanes);
    s0 = hn::ReorderWidenMulAccumulate(df, a0, b0, s0, t0);
    s1 = hn::ReorderWidenMulAccumulate(df, a0, b1, s1, t1);
    s2 = hn::ReorderWidenMulAccumulate(df, a1, b0, s2, t2);
    s3 = hn::ReorderWidenMulAccumulate(df, a1, b1, s3, t3);
  }
  const auto sum =
      hn::Add(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), hn::Add(hn::Add(t0, t1), hn::Add(t2, t3)));
  *sink = hn::GetLane(sum);
  return 4.0 * 2.0 * static_cast<double>(lanes) * static_cast<double>(iterations);
#endif
}

float ReadSum(const float* x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (std::int64_t i = 0; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + lanes));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * lanes));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * lanes));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::bench {

HWY_EXPORT(FmaPeak);
HWY_EXPORT(Bf16Peak);
HWY_EXPORT(ReadSum);

double fma_peak_flops(std::int64_t iterations, float* sink) {
  return HWY_DYNAMIC_DISPATCH(FmaPeak)(iterations, sink);
}

#if defined(__x86_64__) && defined(__GNUC__)
// Four independent 16×16×32 tile products per round on tiles that never leave the registers
// (the AMX unit's own limit, like FmaPeak's chains). The caller checked amx_bf16_enabled().
__attribute__((target("amx-tile,amx-bf16"))) double amx_bf16_peak_flops(std::int64_t iterations) {
  struct {
    std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
    std::uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
    std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
  } config;
  __asm__ volatile("ldtilecfg %0" ::"m"(config));  // _tile_loadconfig's operand covers 8 bytes
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  for (std::int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_release();
  return 4.0 * 2 * 16 * 16 * 32 * static_cast<double>(iterations);
}
// Sixteen independent VDPBF16PS chains on registers: each adds the products of 16 bfloat16 pairs
// to 16 float32 lanes. Its latency is longer than the FMA's: on Zen 5 twelve chains reach 0.92 of
// what sixteen or more do. The caller checked cpu_avx512_bf16().
__attribute__((target("avx512f,avx512bf16"))) double dpbf16_peak_flops(std::int64_t iterations,
                                                                       float* sink) {
  const auto a = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f7f));
  const auto b = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3a83));
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(0.1f * static_cast<float>(j));
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  }
  alignas(64) float lanes[16];
  __m512 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm512_add_ps(sum, acc[j]);
  _mm512_store_ps(lanes, sum);
  *sink = lanes[0];
  return kChains * 64.0 * static_cast<double>(iterations);
}
#else
double amx_bf16_peak_flops(std::int64_t) { return 0.0; }
double dpbf16_peak_flops(std::int64_t, float* sink) {
  *sink = 0.0f;
  return 0.0;
}
#endif

double bf16_peak_flops(std::int64_t iterations, float* sink) {
  return HWY_DYNAMIC_DISPATCH(Bf16Peak)(iterations, sink);
}

float read_sum(const float* x, std::int64_t n) { return HWY_DYNAMIC_DISPATCH(ReadSum)(x, n); }

}  // namespace tileops::bench
#endif  // HWY_ONCE
