// Per-target exponentials cheaper than Highway's hn::Exp, for the kernels whose arguments are
// known to be in range: softmax (x·scale − max <= 0) and silu (e^-g, clamped). Include after
// hwy/highway.h in a foreach_target translation unit; the guard toggles like convert-inl.h's.
#if defined(TILEOPS_OPS_CPU_SIMD_FAST_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TILEOPS_OPS_CPU_SIMD_FAST_EXP_INL_H_
#undef TILEOPS_OPS_CPU_SIMD_FAST_EXP_INL_H_
#else
#define TILEOPS_OPS_CPU_SIMD_FAST_EXP_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// e^x for x in [-87.3, 87.3] (normal results only; anything outside is unspecified but never
// traps): x = n·ln2 + r, |r| <= ln2/2, with n rounded by the float magic-number trick (its low
// mantissa bits are n + 127, which shifted into the exponent field give 2^n) and Highway's
// polynomial for e^r. About half the operations of hn::Exp, which also handles subnormals and
// the whole float range. NaN gives NaN.
template <class D, class V>
HWY_INLINE V ExpNormalRange(D d, V x) {
  const hn::Rebind<std::uint32_t, D> du32;
  const V magic = hn::Set(d, 12583039.0f);  // 1.5·2^23 + 127
  const V t = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), magic);
  const V n = hn::Sub(t, magic);
  V r = hn::NegMulAdd(n, hn::Set(d, 0.693145751953125f), x);  // ln2 in two parts: n·part0 exact
  r = hn::NegMulAdd(n, hn::Set(d, 1.428606765330187045e-6f), r);
  // e^r = 1 + r + r²·(c0 + c1·r + ... + c5·r⁵), evaluated in Estrin's order.
  const V r2 = hn::Mul(r, r);
  const V c01 = hn::MulAdd(hn::Set(d, 0.166666671633720397949219f), r, hn::Set(d, 0.5f));
  const V c23 = hn::MulAdd(hn::Set(d, 0.00833336077630519866943359f), r,
                           hn::Set(d, 0.0416664853692054748535156f));
  const V c45 = hn::MulAdd(hn::Set(d, 0.000198527617612853646278381f), r,
                           hn::Set(d, 0.00139304355252534151077271f));
  const V poly = hn::MulAdd(hn::MulAdd(c45, r2, c23), r2, c01);
  const V p = hn::Add(hn::MulAdd(poly, r2, r), hn::Set(d, 1.0f));
  return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(du32, t))));
}

// e^-m for m in [-87.3, 87.3] (normal results only): m = -n·ln2 - r, |r| <= ln2/2, with n
// rounded by the float magic-number trick (its low mantissa bits are n + 127, which shifted
// into the exponent field give 2^n) and Highway's polynomial for e^r (odd terms negated, as
// r = -(m + n·ln2)). ExpNormalRange of -m with the negation folded into the
// coefficients (silu).
template <class D, class V>
HWY_INLINE V ExpOfNegative(D d, V m) {
  const hn::Rebind<std::uint32_t, D> du32;
  const V magic = hn::Set(d, 12583039.0f);  // 1.5·2^23 + 127
  const V t = hn::NegMulAdd(m, hn::Set(d, 1.44269504088896341f), magic);
  const V n = hn::Sub(t, magic);
  V s = hn::MulAdd(n, hn::Set(d, 0.693145751953125f), m);      // ln2 in two parts: n·part0 exact
  s = hn::MulAdd(n, hn::Set(d, 1.428606765330187045e-6f), s);  // s = -r
  // e^r = 1 + r + r²·(c0 + c1·r + ... + c5·r⁵), evaluated in Estrin's order in s = -r.
  const V s2 = hn::Mul(s, s);
  const V c01 = hn::MulAdd(hn::Set(d, -0.166666671633720397949219f), s, hn::Set(d, 0.5f));
  const V c23 = hn::MulAdd(hn::Set(d, -0.00833336077630519866943359f), s,
                           hn::Set(d, 0.0416664853692054748535156f));
  const V c45 = hn::MulAdd(hn::Set(d, -0.000198527617612853646278381f), s,
                           hn::Set(d, 0.00139304355252534151077271f));
  const V poly = hn::MulAdd(hn::MulAdd(c45, s2, c23), s2, c01);
  const V p = hn::Add(hn::MulSub(poly, s2, s), hn::Set(d, 1.0f));
  return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(du32, t))));
}

// 2^y for y in [-127, 127] (0 where y rounds to -127; anything outside is unspecified but never
// traps), to a relative error below 3e-6: a degree-4 fit of 2^f on |f| <= 1/2, y = n + f. For
// results rounded to float16 or bfloat16, whose half ulp (2.4e-4, 2e-3) dwarfs it; 9 operations
// against ExpNormalRange's 14. NaN gives NaN.
template <class D, class V>
HWY_INLINE V Exp2Coarse(D d, V y) {
  const hn::Rebind<std::uint32_t, D> du32;
  const V magic = hn::Set(d, 12583039.0f);  // 1.5·2^23 + 127: t's low mantissa bits are n + 127
  const V t = hn::Add(y, magic);
  const V f = hn::Sub(y, hn::Sub(t, magic));
  V p = hn::MulAdd(hn::Set(d, 0.009582852944731712f), f, hn::Set(d, 0.055906426161527634f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.24024099111557007f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.6931241750717163f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(du32, t))));
}

// 2^y for y in [-127, 127] (as Exp2Coarse) to a relative error below 1.1e-4, exactly 1 at y = 0: a
// degree-3 fit of 2^f = 1 + f·(c1 + c2·f + c3·f²) on |f| <= 1/2, for results rounded to bfloat16,
// whose half ulp (2^-9 = 2e-3 relative) is 19 times the error: 1% of the 2^y rounded to bfloat16
// land one unit off the correctly rounded value (0.03% with Exp2Coarse; uniform y in [-20, 0]),
// for one operation fewer (10% faster bfloat16 softmax on AVX2). NaN gives NaN.
template <class D, class V>
HWY_INLINE V Exp2Rough(D d, V y) {
  const hn::Rebind<std::uint32_t, D> du32;
  const V magic = hn::Set(d, 12583039.0f);  // 1.5·2^23 + 127: t's low mantissa bits are n + 127
  const V t = hn::Add(y, magic);
  // f = y − n with n rounded to nearest even by Round, beside t rather than after it: the same
  // n as t's (both round to nearest even), a shorter dependency chain (avx2: softmax +2-5%).
  const V f = hn::Sub(y, hn::Round(y));
  V p = hn::MulAdd(hn::Set(d, 0.05500757321715355f), f, hn::Set(d, 0.2422076016664505f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.6932827234268188f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(du32, t))));
}

// 2^y for y in [-127, 127] to a relative error below 1e-7 (2 ulp): Exp2Coarse's reduction with
// a degree-6 fit of 2^f on |f| <= 1/2, for float32 results. Fewer constants than ExpNormalRange
// (no split ln2), which keeps a 2-vector loop within AVX2's 16 registers.
template <class D, class V>
HWY_INLINE V Exp2Fine(D d, V y) {
  const hn::Rebind<std::uint32_t, D> du32;
  const V magic = hn::Set(d, 12583039.0f);  // 1.5·2^23 + 127: t's low mantissa bits are n + 127
  const V t = hn::Add(y, magic);
  const V f = hn::Sub(y, hn::Sub(t, magic));
  V p = hn::MulAdd(hn::Set(d, 0.00015353361959569156f), f, hn::Set(d, 0.0013398875016719103f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.00961843691766262f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.055503323674201965f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.24022647738456726f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.6931471824645996f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(du32, t))));
}

// e^x for x <= 0, as softmax needs it: within 2 ulp of std::exp down to -87.3, exactly 0 below
// (-inf included), where e^x < 1.2e-38 vanishes against a row sum >= 1. NaN gives NaN.
template <class D, class V>
HWY_INLINE V ExpNonPositive(D d, V x) {
  return hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, -87.3f)), ExpNormalRange(d, x));
}

// Exp2Coarse for y <= 0 (softmax in log2 units): exactly 0 below -126.5 (-inf included). NaN
// gives NaN. On x86 vectors, y is clamped at -127, whose 2^n is the all-zero exponent field: one
// max instead of a compare and a select (maxps returns its second operand, y, when y is NaN).
template <class D, class V>
HWY_INLINE V Exp2CoarseNonPositive(D d, V y) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
  return Exp2Coarse(d, hn::Max(hn::Set(d, -127.0f), y));
#else
  return hn::IfThenZeroElse(hn::Lt(y, hn::Set(d, -126.5f)), Exp2Coarse(d, y));
#endif
}

// Exp2Rough for y <= 0: exactly 0 below -126.5 (-inf included), NaN gives NaN; clamped like
// Exp2CoarseNonPositive.
template <class D, class V>
HWY_INLINE V Exp2RoughNonPositive(D d, V y) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
  return Exp2Rough(d, hn::Max(hn::Set(d, -127.0f), y));
#else
  return hn::IfThenZeroElse(hn::Lt(y, hn::Set(d, -126.5f)), Exp2Rough(d, y));
#endif
}

// Exp2Fine for y <= 0: exactly 0 below -126.5 (-inf included), NaN gives NaN; clamped like
// Exp2CoarseNonPositive.
template <class D, class V>
HWY_INLINE V Exp2FineNonPositive(D d, V y) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
  return Exp2Fine(d, hn::Max(hn::Set(d, -127.0f), y));
#else
  return hn::IfThenZeroElse(hn::Lt(y, hn::Set(d, -126.5f)), Exp2Fine(d, y));
#endif
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TILEOPS_OPS_CPU_SIMD_FAST_EXP_INL_H_ toggle
