// The kernel vocabulary of src/ops/cpu/simd: one traits table per element type (F32Elem,
// F16Elem, BF16Elem: a row of that type read as float32 lanes and written back rounded to
// nearest even), one tail helper (ForEachVector: a loop body written once runs on whole vectors
// and on the last partial one through LoadN/StoreN), and one dtype dispatch (VisitFloat: a kernel
// templated on its element type becomes one exported function taking the DataType). Include
// after hwy/highway.h in a foreach_target translation unit (a toggled guard, like convert-inl.h).
#if defined(TILEOPS_OPS_CPU_SIMD_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TILEOPS_OPS_CPU_SIMD_ROWS_INL_H_
#undef TILEOPS_OPS_CPU_SIMD_ROWS_INL_H_
#else
#define TILEOPS_OPS_CPU_SIMD_ROWS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "hwy/highway.h"
#include "src/ops/cpu/simd/convert-inl.h"
#include "tileops/core/data_type.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Masked loads and stores that never touch masked-off lanes (AVX-512, SVE, RVV). Elsewhere
// Highway 1.0.3 emulates them with whole-vector accesses, so tails go through a stack buffer.
inline constexpr bool kMaskedMemOps = !HWY_MEM_OPS_MIGHT_FAULT;

// Each traits table: T, the type in memory; Load (Lanes(d) elements at p, any alignment) and
// Store (with `stream`, a streaming store: src/ops/cpu/streaming.h) and Store2 (2·Lanes(d)
// elements from two vectors, the first one first: bfloat16 packs both at once); StoreRounded, which
// also returns what it stored as float32 so that a kernel goes on with exactly the written value;
// ToF32 and FromF32 for scalars. kBits: the 16-bit types' vector conversions FromBits/ToBits,
// which the masked tails use. kPairs: LoadPairs/StorePairs read and write 2·Lanes(d) elements as
// even- and odd-indexed vectors, cheaper than two Loads, for kernels indifferent to lane order.
struct F32Elem {
  using T = float;
  static constexpr DataType kDtype = DataType::kFloat32;
  static constexpr bool kBits = false;
  static constexpr bool kPairs = false;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* p) {
    return hn::LoadU(d, p);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, T* p, bool stream = false) {
    StoreMaybeStreaming(v, d, p, stream);
  }
  template <class D>
  static HWY_INLINE void Store2(D d, hn::Vec<D> v0, hn::Vec<D> v1, T* p, bool stream = false) {
    StoreMaybeStreaming(v0, d, p, stream);
    StoreMaybeStreaming(v1, d, p + hn::Lanes(d), stream);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, T* p) {
    hn::StoreU(v, d, p);
    return v;
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Round(D, hn::Vec<D> v) {
    return v;
  }
  static float ToF32(T x) { return x; }
  static T FromF32(float x) { return x; }
};

struct BF16Elem {
  using T = std::uint16_t;
  static constexpr DataType kDtype = DataType::kBFloat16;
  static constexpr bool kBits = true;
  static constexpr bool kPairs = true;
  template <class D>
  static HWY_INLINE hn::Vec<D> FromBits(D d, hn::Vec<hn::Rebind<std::uint16_t, D>> bits) {
    const hn::Rebind<std::uint32_t, D> du32;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, bits)));
  }
  template <class D>
  static HWY_INLINE hn::Vec<hn::Rebind<std::uint16_t, D>> ToBits(D d, hn::Vec<D> v) {
    const hn::Rebind<std::int32_t, D> di32;
    const hn::Rebind<std::uint16_t, D> du16;
    return hn::DemoteTo(du16, hn::BitCast(di32, hn::ShiftRight<16>(RoundToBF16High(d, v))));
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* p) {
    return LoadBF16AsF32(d, p);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, T* p, bool stream = false) {
    StoreF32AsBF16(d, v, p, stream);
  }
  template <class D>
  static HWY_INLINE void Store2(D d, hn::Vec<D> v0, hn::Vec<D> v1, T* p, bool stream = false) {
    StoreF32x2AsBF16(d, v0, v1, p, stream);
  }
  template <class D>
  static HWY_INLINE void LoadPairs(D d, const T* p, hn::Vec<D>& even, hn::Vec<D>& odd) {
    LoadBF16PairsAsF32(d, p, even, odd);
  }
  template <class D>
  static HWY_INLINE void StorePairs(D d, hn::Vec<D> even, hn::Vec<D> odd, T* p,
                                    bool stream = false) {
    StoreF32PairsAsBF16(d, even, odd, p, stream);
  }
  // StorePairs for values computed from bfloat16 operands alone (StoreF32PairsOfBF16MathAsBF16).
  template <class D>
  static HWY_INLINE void StorePairsOfOwnMath(D d, hn::Vec<D> even, hn::Vec<D> odd, T* p,
                                             bool stream = false) {
    StoreF32PairsOfBF16MathAsBF16(d, even, odd, p, stream);
  }
  // StorePairs, leaving in even and odd the values stored.
  template <class D>
  static HWY_INLINE void StorePairsRounded(D d, hn::Vec<D>& even, hn::Vec<D>& odd, T* p) {
    const hn::Rebind<std::uint32_t, D> du32;
    const auto high_half = hn::Set(du32, 0xffff0000u);
    const auto e = hn::And(RoundToBF16High(d, even), high_half);
    const auto o = hn::And(RoundToBF16High(d, odd), high_half);
    hn::StoreU(hn::Or(hn::ShiftRight<16>(e), o), du32, reinterpret_cast<std::uint32_t*>(p));
    even = hn::BitCast(d, e);
    odd = hn::BitCast(d, o);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Round(D d, hn::Vec<D> v) {
    const hn::Rebind<std::uint32_t, D> du32;
    return hn::BitCast(d, hn::And(RoundToBF16High(d, v), hn::Set(du32, 0xffff0000u)));
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, T* p) {
    const hn::Rebind<std::uint32_t, D> du32;
    const hn::Rebind<std::int32_t, D> di32;
    const hn::Rebind<std::uint16_t, D> du16;
    const auto high = RoundToBF16High(d, v);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, hn::ShiftRight<16>(high))), du16, p);
    return hn::BitCast(d, hn::And(high, hn::Set(du32, 0xffff0000u)));
  }
  static float ToF32(T x) { return bfloat16_to_float(x); }
  static T FromF32(float x) { return float_to_bfloat16(x); }
};

struct F16Elem {
  using T = std::uint16_t;
  static constexpr DataType kDtype = DataType::kFloat16;
  static constexpr bool kBits = kExactF16Vectors;
  static constexpr bool kPairs = false;
  template <class D>
  static HWY_INLINE hn::Vec<D> FromBits(D d, hn::Vec<hn::Rebind<std::uint16_t, D>> bits) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::BitCast(dh, bits));
  }
  template <class D>
  static HWY_INLINE hn::Vec<hn::Rebind<std::uint16_t, D>> ToBits(D, hn::Vec<D> v) {
    const hn::Rebind<hwy::float16_t, D> dh;
    const hn::Rebind<std::uint16_t, D> du16;
    return hn::BitCast(du16, hn::DemoteTo(dh, v));
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* p) {
    return LoadF16AsF32(d, p);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, T* p, bool stream = false) {
    StoreF32AsF16(d, v, p, stream);
  }
  template <class D>
  static HWY_INLINE void Store2(D d, hn::Vec<D> v0, hn::Vec<D> v1, T* p, bool stream = false) {
    StoreF32AsF16(d, v0, p, stream);
    StoreF32AsF16(d, v1, p + hn::Lanes(d), stream);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Round(D d, hn::Vec<D> v) {
    if constexpr (kExactF16Vectors) {
      const hn::Rebind<hwy::float16_t, D> dh;
      return hn::PromoteTo(d, hn::DemoteTo(dh, v));
    } else {
      HWY_ALIGN float lanes[hn::MaxLanes(d)];
      hn::Store(v, d, lanes);
      for (std::size_t i = 0; i < hn::Lanes(d); ++i) {
        lanes[i] = float16_to_float(float_to_float16(lanes[i]));
      }
      return hn::Load(d, lanes);
    }
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, T* p) {
    if constexpr (kExactF16Vectors) {
      const hn::Rebind<hwy::float16_t, D> dh;
      const auto h = hn::DemoteTo(dh, v);
      hn::StoreU(h, dh, reinterpret_cast<hwy::float16_t*>(p));
      return hn::PromoteTo(d, h);
    } else {
      StoreF32AsF16(d, v, p);
      return LoadF16AsF32(d, p);
    }
  }
  static float ToF32(T x) { return float16_to_float(x); }
  static T FromF32(float x) { return float_to_float16(x); }
};

// The first `count` < Lanes(d) elements at p as float32 lanes; the others are zero. Touches no
// element past p + count.
template <class E, class D>
HWY_INLINE hn::Vec<D> LoadN(D d, const typename E::T* p, std::size_t count) {
  if constexpr (kMaskedMemOps && std::is_same_v<typename E::T, float>) {
    return hn::MaskedLoad(hn::FirstN(d, count), d, p);
  } else if constexpr (kMaskedMemOps && E::kBits) {
    const hn::Rebind<std::uint16_t, D> du16;
    return E::FromBits(d, hn::MaskedLoad(hn::FirstN(du16, count), du16, p));
  } else {
    HWY_ALIGN typename E::T buf[hn::MaxLanes(d)] = {};
    std::copy_n(p, count, buf);
    return E::Load(d, buf);
  }
}

// Stores the first `count` < Lanes(d) lanes of v at p, rounded like E::Store; touches no element
// past p + count.
template <class E, class D>
HWY_INLINE void StoreN(D d, hn::Vec<D> v, typename E::T* p, std::size_t count) {
  if constexpr (kMaskedMemOps && std::is_same_v<typename E::T, float>) {
    hn::BlendedStore(v, hn::FirstN(d, count), d, p);
  } else if constexpr (kMaskedMemOps && E::kBits) {
    const hn::Rebind<std::uint16_t, D> du16;
    hn::BlendedStore(E::ToBits(d, v), hn::FirstN(du16, count), du16, p);
  } else {
    HWY_ALIGN typename E::T buf[hn::MaxLanes(d)];
    E::Store(d, v, buf);
    std::copy_n(buf, count, p);
  }
}

// Where a loop body is: a whole vector, or the first `count` lanes of the last one. Load, Store
// and StoreRounded take it, so that one body serves both.
struct Whole {};
struct Part {
  std::size_t count;
};

template <class E, class D>
HWY_INLINE hn::Vec<D> Load(D d, const typename E::T* p, Whole) {
  return E::Load(d, p);
}
template <class E, class D>
HWY_INLINE hn::Vec<D> Load(D d, const typename E::T* p, Part part) {
  return LoadN<E>(d, p, part.count);
}
template <class E, class D>
HWY_INLINE void Store(D d, hn::Vec<D> v, typename E::T* p, Whole, bool stream = false) {
  E::Store(d, v, p, stream);
}
template <class E, class D>
HWY_INLINE void Store(D d, hn::Vec<D> v, typename E::T* p, Part part, bool = false) {
  StoreN<E>(d, v, p, part.count);
}
template <class E, class D>
HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, typename E::T* p, Whole) {
  return E::StoreRounded(d, v, p);
}
template <class E, class D>
HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, typename E::T* p, Part part) {
  const auto rounded = E::Round(d, v);
  StoreN<E>(d, rounded, p, part.count);
  return rounded;
}
// Lanes past a Part's count (zero after a Load) replaced by `fill`, for reductions whose
// identity is not zero.
template <class D>
HWY_INLINE hn::Vec<D> Valid(D, hn::Vec<D> v, Whole, hn::Vec<D>) {
  return v;
}
template <class D>
HWY_INLINE hn::Vec<D> Valid(D d, hn::Vec<D> v, Part part, hn::Vec<D> fill) {
  return hn::IfThenElse(hn::FirstN(d, part.count), v, fill);
}

// body(i, Whole{}) for each whole vector of [begin, n), then body(i, Part{n - i}) for the rest.
template <class D, class Body>
HWY_INLINE void ForEachVector(D d, std::int64_t begin, std::int64_t n, Body&& body) {
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = begin;
  for (; i + lanes <= n; i += lanes) body(i, Whole{});
  if (i < n) body(i, Part{static_cast<std::size_t>(n - i)});
}

// f(E{}) for the traits table of dtype (float32, float16 or bfloat16); any other dtype is an
// internal error of `what`.
template <class F>
HWY_INLINE decltype(auto) VisitFloat(DataType dtype, const char* what, F&& f) {
  switch (dtype) {
    case DataType::kFloat32:
      return std::forward<F>(f)(F32Elem{});
    case DataType::kFloat16:
      return std::forward<F>(f)(F16Elem{});
    case DataType::kBFloat16:
      return std::forward<F>(f)(BF16Elem{});
    default:
      throw_internal_error(what, "dtype is not float32/float16/bfloat16");
  }
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // TILEOPS_OPS_CPU_SIMD_ROWS_INL_H_ toggle
