// Per-target conversions of one float32 vector from and to float16/bfloat16 bits, under the
// element traits of rows-inl.h. Round-to-nearest-even, NaN stays NaN, and
// the results equal the scalar functions of core/float16.h on every target. Include after
// hwy/highway.h in a foreach_target translation unit: like Highway's own -inl.h headers, the
// guard toggles so that each target's pass compiles it again.
#if defined(TILEOPS_OPS_CPU_SIMD_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TILEOPS_OPS_CPU_SIMD_CONVERT_INL_H_
#undef TILEOPS_OPS_CPU_SIMD_CONVERT_INL_H_
#else
#define TILEOPS_OPS_CPU_SIMD_CONVERT_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "tileops/core/float16.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Highway 1.0.3 emulates float16 <-> float32 on targets without hardware conversions (x86
// SSE4 and older, SCALAR/EMU128), and the emulation truncates instead of rounding and turns
// Inf/NaN into finite values. Only x86 AVX2+ (F16C) and Arm use vectors; the others convert
// lane by lane with the exact scalar functions.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || HWY_ARCH_ARM
inline constexpr bool kExactF16Vectors = true;
#else
inline constexpr bool kExactF16Vectors = false;
#endif

// Stores v at p (any alignment); with `stream`, a vector-aligned p gets a streaming store
// (src/ops/cpu/streaming.h: the caller fences). Not for vectors under 16 bytes: Highway 1.0.3's
// x86 Stream writes 16 bytes whatever the vector's size.
template <class D>
HWY_INLINE void StoreMaybeStreaming(hn::Vec<D> v, D d, hn::TFromD<D>* p, bool stream) {
  constexpr std::size_t kBytes = sizeof(hn::TFromD<D>) * hn::MaxLanes(D());
  constexpr std::uintptr_t kAlignMask = kBytes - 1;
  if (kBytes % 16 == 0 && stream && (reinterpret_cast<std::uintptr_t>(p) & kAlignMask) == 0) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// Lanes(d) float16 values at p (any alignment) as float32.
template <class D>
HWY_INLINE hn::Vec<D> LoadF16AsF32(D d, const std::uint16_t* p) {
  if constexpr (kExactF16Vectors) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  } else {
    HWY_ALIGN float lanes[hn::MaxLanes(d)];
    for (std::size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = float16_to_float(p[i]);
    return hn::Load(d, lanes);
  }
}

template <class D>
HWY_INLINE void StoreF32AsF16(D d, hn::Vec<D> v, std::uint16_t* p, bool stream = false) {
  if constexpr (kExactF16Vectors) {
    const hn::Rebind<hwy::float16_t, D> dh;
    StoreMaybeStreaming(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(p), stream);
  } else {
    HWY_ALIGN float lanes[hn::MaxLanes(d)];
    hn::Store(v, d, lanes);
    for (std::size_t i = 0; i < hn::Lanes(d); ++i) p[i] = float_to_float16(lanes[i]);
  }
}

template <class D>
HWY_INLINE hn::Vec<D> LoadBF16AsF32(D d, const std::uint16_t* p) {
  const hn::Rebind<std::uint32_t, D> du32;
  const hn::Rebind<std::uint16_t, D> du16;
  return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
}

// v rounded to bfloat16, to nearest even in integer arithmetic (Highway 1.0's DemoteTo to
// bfloat16 truncates), for v not NaN: float32 bits whose upper half is the bfloat16; the lower
// half is unspecified.
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<std::uint32_t, D>> RoundNumberToBF16High(D, hn::Vec<D> v) {
  const hn::Rebind<std::uint32_t, D> du32;
  const auto u = hn::BitCast(du32, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
  return hn::Add(u, hn::Add(hn::Set(du32, 0x7fffu), lsb));
}

// RoundNumberToBF16High for v in [0, 2^111] (probabilities; the lower half unspecified). On x86
// vectors in 3 floating-point operations against its 4 integer ones: Veltkamp's split of v at 8
// significant bits, hi = c - (c - v) with c = v·(2^16 + 1), rounds to nearest even (checked for
// every float in [2^-126, 1]); float32 subnormals (v < 2^-126) may come out one bfloat16 unit
// (2^-133) below the nearest. c must be rounded on its own: GCC's default -ffp-contract=fast
// would fuse c - v into an FMA across statements, which an empty asm on c forbids.
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<std::uint32_t, D>> RoundSmallToBF16High(D d, hn::Vec<D> v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSE4
  const hn::Rebind<std::uint32_t, D> du32;
  auto c = hn::Mul(v, hn::Set(d, 65537.0f));
  asm("" : "+x"(c.raw));
  return hn::BitCast(du32, hn::Sub(c, hn::Sub(c, v)));
#else
  return RoundNumberToBF16High(d, v);
#endif
}

// RoundNumberToBF16High for any v: NaN stays NaN (quieted).
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<std::uint32_t, D>> RoundToBF16High(D d, hn::Vec<D> v) {
  const hn::Rebind<std::uint32_t, D> du32;
  // IsNaN is an unordered compare (Highway 1.0.3's float Ne is ordered on AVX2/AVX3).
  const auto quiet = hn::Or(hn::BitCast(du32, v), hn::Set(du32, 0x00400000u));
  return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet, RoundNumberToBF16High(d, v));
}

// Whether a or b may hold a NaN: one add and one unordered compare for both, so that NaN-free
// vectors (nearly all) round without RoundToBF16High's select, about a third of its operations
// below AVX-512. inf + -inf reads as NaN: that pair takes the exact path too.
template <class D>
HWY_INLINE bool MayHoldNaN(D d, hn::Vec<D> a, hn::Vec<D> b) {
  return !hn::AllFalse(d, hn::IsNaN(hn::Add(a, b)));
}

template <class D>
HWY_INLINE void StoreF32AsBF16(D d, hn::Vec<D> v, std::uint16_t* p, bool stream = false) {
  const hn::Rebind<std::int32_t, D> di32;
  const hn::Rebind<std::uint16_t, D> du16;
  const auto bits = hn::ShiftRight<16>(RoundToBF16High(d, v));
  StoreMaybeStreaming(hn::DemoteTo(du16, hn::BitCast(di32, bits)), du16, p, stream);
}

// 2·Lanes(d) bfloat16 values at p as two float32 vectors, of the even-indexed and of the
// odd-indexed elements: each 32-bit pair is split in place, without lane shuffles. For
// elementwise kernels, which do not care about lane order.
template <class D>
HWY_INLINE void LoadBF16PairsAsF32(D d, const std::uint16_t* p, hn::Vec<D>& even, hn::Vec<D>& odd) {
  const hn::Rebind<std::uint32_t, D> du32;
  const auto pairs = hn::LoadU(du32, reinterpret_cast<const std::uint32_t*>(p));
  even = hn::BitCast(d, hn::ShiftLeft<16>(pairs));
  odd = hn::BitCast(d, hn::And(pairs, hn::Set(du32, 0xffff0000u)));
}

// 32-bit lanes of the upper halves of `even` (into the lower 16 bits) and of `odd` (into the
// upper 16 bits): bfloat16 pairs from float32 bits whose upper halves are the bfloat16s. One
// shift and one 16-bit blend.
template <class DU32>
HWY_INLINE hn::Vec<DU32> JoinBF16Halves(DU32 du32, hn::Vec<DU32> even, hn::Vec<DU32> odd) {
  const auto low = hn::ShiftRight<16>(even);
#if HWY_TARGET == HWY_SCALAR
  return hn::Or(low, hn::And(odd, hn::Set(du32, 0xffff0000u)));
#else
  const hn::Repartition<std::uint16_t, DU32> du16;
  return hn::BitCast(du32, hn::OddEven(hn::BitCast(du16, odd), hn::BitCast(du16, low)));
#endif
}

// The inverse of LoadBF16PairsAsF32, rounding like StoreF32AsBF16.
template <class D>
HWY_INLINE void StoreF32PairsAsBF16(D d, hn::Vec<D> even, hn::Vec<D> odd, std::uint16_t* p,
                                    bool stream = false) {
  const hn::Rebind<std::uint32_t, D> du32;
  auto* out = reinterpret_cast<std::uint32_t*>(p);
  if (HWY_UNLIKELY(MayHoldNaN(d, even, odd))) {
    StoreMaybeStreaming(JoinBF16Halves(du32, RoundToBF16High(d, even), RoundToBF16High(d, odd)),
                        du32, out, stream);
  } else {
    StoreMaybeStreaming(
        JoinBF16Halves(du32, RoundNumberToBF16High(d, even), RoundNumberToBF16High(d, odd)), du32,
        out, stream);
  }
}

// StoreF32PairsAsBF16 for values computed from bfloat16 operands alone (elementwise add, mul,
// swiglu): without its NaN check, as every NaN among them keeps a zero lower half — a
// propagated operand NaN (payload from a bfloat16, quieted or not) or the hardware's default
// NaN — so that the rounding's add (at most 0x8000) cannot carry into the upper half, which
// stays a NaN.
template <class D>
HWY_INLINE void StoreF32PairsOfBF16MathAsBF16(D d, hn::Vec<D> even, hn::Vec<D> odd,
                                              std::uint16_t* p, bool stream = false) {
  const hn::Rebind<std::uint32_t, D> du32;
  StoreMaybeStreaming(
      JoinBF16Halves(du32, RoundNumberToBF16High(d, even), RoundNumberToBF16High(d, odd)), du32,
      reinterpret_cast<std::uint32_t*>(p), stream);
}

// 2·Lanes(d) bfloat16 values at p, v0's then v1's, rounded like StoreF32AsBF16: the upper halves
// of both rounded vectors gathered by one ConcatOdd (below AVX-512: two shifts, a pack and a
// cross-lane permute for 16 values, against three operations per 8 for DemoteTo).
template <class D>
HWY_INLINE void StoreF32x2AsBF16(D d, hn::Vec<D> v0, hn::Vec<D> v1, std::uint16_t* p,
                                 bool stream = false) {
#if HWY_TARGET == HWY_SCALAR
  StoreF32AsBF16(d, v0, p, stream);
  StoreF32AsBF16(d, v1, p + 1, stream);
#else
  const hn::Repartition<std::uint16_t, D> du16;
  const auto join = [&](auto r0, auto r1) {
    return hn::ConcatOdd(du16, hn::BitCast(du16, r1), hn::BitCast(du16, r0));
  };
  if (HWY_UNLIKELY(MayHoldNaN(d, v0, v1))) {
    StoreMaybeStreaming(join(RoundToBF16High(d, v0), RoundToBF16High(d, v1)), du16, p, stream);
  } else {
    StoreMaybeStreaming(join(RoundNumberToBF16High(d, v0), RoundNumberToBF16High(d, v1)), du16, p,
                        stream);
  }
#endif
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TILEOPS_OPS_CPU_SIMD_CONVERT_INL_H_ toggle
