#include "src/ops/cpu/simd/fp8_kernels.h"

#include <cstddef>
#include <cstring>

#include "tileops/core/error.h"
#include "tileops/core/float8.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/fp8_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/fp8-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;

template <int kMant, int kBias, bool kInfinities>
void DecodeRun(const std::uint8_t* src, std::int64_t n, float scale, float* dst) {
  const DF df;
  const DI di;
  const hn::Rebind<std::uint8_t, DF> d8;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const auto vs = hn::Set(df, scale);
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto bits =
        hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<DF>(), hn::LoadU(d8, src + i)));
    hn::StoreU(hn::Mul(Decode<kMant, kBias, kInfinities>(df, bits), vs), df, dst + i);
  }
  if (i < n) {  // the tail through a zero-padded vector
    HWY_ALIGN std::uint8_t tail[hn::MaxLanes(d8)] = {};
    HWY_ALIGN float out[hn::MaxLanes(df)];
    for (std::int64_t t = 0; t < n - i; ++t) tail[t] = src[i + t];
    const auto bits =
        hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<DF>(), hn::Load(d8, tail)));
    hn::Store(hn::Mul(Decode<kMant, kBias, kInfinities>(df, bits), vs), df, out);
    for (std::int64_t t = 0; t < n - i; ++t) dst[i + t] = out[t];
  }
}

// float32 values with zero low halves (decoded float8) as their bfloat16 bits.
template <bool kE4M3>
void DecodeRunBF16(const std::uint8_t* src, std::int64_t n, std::uint16_t* dst) {
  const DF df;
  const hn::Rebind<std::uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const auto high = [&](hn::Vec<DF> v) {
    return hn::DemoteTo(d16, hn::BitCast(DI(), hn::ShiftRight<16>(hn::BitCast(du, v))));
  };
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(high(LoadFp8AsF32<kE4M3>(df, src + i)), d16, dst + i);
  if (i < n) {
    HWY_ALIGN std::uint8_t tail[hn::MaxLanes(df)] = {};
    HWY_ALIGN std::uint16_t out[hn::MaxLanes(df)];
    for (std::int64_t t = 0; t < n - i; ++t) tail[t] = src[i + t];
    hn::Store(high(LoadFp8AsF32<kE4M3>(df, tail)), d16, out);
    for (std::int64_t t = 0; t < n - i; ++t) dst[i + t] = out[t];
  }
}

void E4M3ToBF16(const std::uint8_t* src, std::int64_t n, std::uint16_t* dst) {
  DecodeRunBF16<true>(src, n, dst);
}
void E5M2ToBF16(const std::uint8_t* src, std::int64_t n, std::uint16_t* dst) {
  DecodeRunBF16<false>(src, n, dst);
}

void E4M3ToF32(const std::uint8_t* src, std::int64_t n, float scale, float* dst) {
  DecodeRun<3, 7, false>(src, n, scale, dst);
}
void E5M2ToF32(const std::uint8_t* src, std::int64_t n, float scale, float* dst) {
  DecodeRun<2, 15, true>(src, n, scale, dst);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(E4M3ToF32);
HWY_EXPORT(E5M2ToF32);
HWY_EXPORT(E4M3ToBF16);
HWY_EXPORT(E5M2ToBF16);

void fp8_to_f32(const std::uint8_t* src, std::int64_t stride, std::int64_t n, DataType kind,
                float scale, float* dst) {
  const bool e4m3 = kind == DataType::kFloat8E4M3FN;
  if (!e4m3 && kind != DataType::kFloat8E5M2) {
    throw_internal_error("fp8_to_f32", "kind must be float8_e4m3fn or float8_e5m2");
  }
  if (stride == 1) {
    if (e4m3) return TILEOPS_DYNAMIC_DISPATCH(E4M3ToF32)(src, n, scale, dst);
    return TILEOPS_DYNAMIC_DISPATCH(E5M2ToF32)(src, n, scale, dst);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t bits = src[i * stride];
    dst[i] = scale * (e4m3 ? float8_e4m3fn_to_float(bits) : float8_e5m2_to_float(bits));
  }
}

void fp8_to_bf16(const std::uint8_t* src, std::int64_t stride, std::int64_t n, DataType kind,
                 std::uint16_t* dst) {
  const bool e4m3 = kind == DataType::kFloat8E4M3FN;
  if (!e4m3 && kind != DataType::kFloat8E5M2) {
    throw_internal_error("fp8_to_bf16", "kind must be float8_e4m3fn or float8_e5m2");
  }
  if (stride == 1) {
    if (e4m3) return TILEOPS_DYNAMIC_DISPATCH(E4M3ToBF16)(src, n, dst);
    return TILEOPS_DYNAMIC_DISPATCH(E5M2ToBF16)(src, n, dst);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t bits = src[i * stride];
    const float v = e4m3 ? float8_e4m3fn_to_float(bits) : float8_e5m2_to_float(bits);
    std::uint32_t word;
    std::memcpy(&word, &v, sizeof word);
    dst[i] = static_cast<std::uint16_t>(word >> 16);
  }
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
