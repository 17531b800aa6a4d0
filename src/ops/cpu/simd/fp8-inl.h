// Per-target decoding of float8 codes (e4m3fn, e5m2) to float32 lanes, exact on every target:
// fp8_kernels.cc's runs and the fp8 weights of gemm_kernels.cc's decode dot products. Include
// after hwy/highway.h in a foreach_target translation unit (a toggled guard, like convert-inl.h).
#if defined(TILEOPS_OPS_CPU_SIMD_FP8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TILEOPS_OPS_CPU_SIMD_FP8_INL_H_
#undef TILEOPS_OPS_CPU_SIMD_FP8_INL_H_
#else
#define TILEOPS_OPS_CPU_SIMD_FP8_INL_H_
#endif

#include <cstdint>
#include <limits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One format: kMant mantissa bits, exponent bias kBias. Normal magnitudes move into float32's
// fields with one shift and one add of the bias difference; subnormals (exponent 0) are the
// mantissa times 2^(1 - bias - kMant), computed without float32 subnormals (a CPU with DAZ set
// would read those as zero); the top codes are NaN (e4m3fn) or Inf/NaN (e5m2).
template <int kMant, int kBias, bool kInfinities, class DF>
HWY_INLINE hn::Vec<DF> Decode(DF df, hn::Vec<hn::RebindToSigned<DF>> bits) {
  const hn::RebindToSigned<DF> di;
  const auto mag = hn::And(bits, hn::Set(di, 0x7F));
  const auto normal =
      hn::BitCast(df, hn::Add(hn::ShiftLeft<23 - kMant>(mag), hn::Set(di, (127 - kBias) << 23)));
  constexpr float kSubnormalUnit = 1.0f / static_cast<float>(1 << (kBias - 1 + kMant));
  const auto subnormal = hn::Mul(hn::ConvertTo(df, mag), hn::Set(df, kSubnormalUnit));
  auto v =
      hn::IfThenElse(hn::RebindMask(df, hn::Lt(mag, hn::Set(di, 1 << kMant))), subnormal, normal);
  if constexpr (kInfinities) {  // exponent all ones: Inf (mantissa 0) or NaN
    const auto special = hn::BitCast(
        df, hn::Or(hn::ShiftLeft<23 - kMant>(hn::And(mag, hn::Set(di, (1 << kMant) - 1))),
                   hn::Set(di, 0x7F800000)));
    v = hn::IfThenElse(hn::RebindMask(df, hn::Gt(mag, hn::Set(di, 0x7F - (1 << kMant)))), special,
                       v);
  } else {  // S.1111.111 is NaN, the only special code
    v = hn::IfThenElse(hn::RebindMask(df, hn::Eq(mag, hn::Set(di, 0x7F))),
                       hn::Set(df, std::numeric_limits<float>::quiet_NaN()), v);
  }
  const auto sign = hn::ShiftLeft<24>(hn::And(bits, hn::Set(di, 0x80)));
  return hn::Or(v, hn::BitCast(df, sign));
}

// Lanes(df) codes at p (any alignment) decoded; kE4M3: float8_e4m3fn, else float8_e5m2.
template <bool kE4M3, class DF>
HWY_INLINE hn::Vec<DF> LoadFp8AsF32(DF df, const std::uint8_t* p) {
  const hn::Rebind<std::uint8_t, DF> d8;
  const auto bits = hn::BitCast(hn::RebindToSigned<DF>(),
                                hn::PromoteTo(hn::RebindToUnsigned<DF>(), hn::LoadU(d8, p)));
  if constexpr (kE4M3) {
    return Decode<3, 7, false>(df, bits);
  } else {
    return Decode<2, 15, true>(df, bits);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TILEOPS_OPS_CPU_SIMD_FP8_INL_H_
