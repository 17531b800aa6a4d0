// Highway kernels of the elementwise operators, compiled once per SIMD target and dispatched at
// run time: one loop template over the storage type and the operation.
#include "src/ops/cpu/simd/elementwise_kernels.h"

#include <type_traits>

#include "src/ops/cpu/streaming.h"
#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/elementwise_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/convert-inl.h"
#include "src/ops/cpu/simd/fast_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using F16 = hwy::float16_t;
using BF16 = hwy::bfloat16_t;

// Float32 vectors from and to each storage type (convert-inl.h for the 16-bit ones).
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const float* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const F16* p) {
  return LoadF16AsF32(d, reinterpret_cast<const std::uint16_t*>(p));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const BF16* p) {
  return LoadBF16AsF32(d, reinterpret_cast<const std::uint16_t*>(p));
}

template <class D>
HWY_INLINE void StoreF32(D d, hn::Vec<D> v, float* p, bool stream = false) {
  StoreMaybeStreaming(v, d, p, stream);
}
template <class D>
HWY_INLINE void StoreF32(D d, hn::Vec<D> v, F16* p, bool stream = false) {
  StoreF32AsF16(d, v, reinterpret_cast<std::uint16_t*>(p), stream);
}
template <class D>
HWY_INLINE void StoreF32(D d, hn::Vec<D> v, BF16* p, bool stream = false) {
  StoreF32AsBF16(d, v, reinterpret_cast<std::uint16_t*>(p), stream);
}

// silu(g) = g / (1 + e^-g). For g > 87.3, e^-g vanishes against 1, so the exponent is clamped
// there (silu = g); for g < -87.3, |silu(g)| < 1e-35 and the result is 0, whatever the
// out-of-range exponent gave. NaN propagates through the division by g's own value.
// kCoarse: results are rounded to a 16-bit float, so e^-g = 2^(-g·log2 e) to 3e-6 suffices.
// (An approximate reciprocal with a Newton step measured no faster than the divide here.)
template <bool kCoarse, class D, class V>
HWY_INLINE V Silu(D d, V g) {
  const V limit = hn::Set(d, 87.3f);
  const V clamped = hn::Min(g, limit);
  V e;
  if constexpr (kCoarse) {
    e = Exp2Coarse(d, hn::Mul(clamped, hn::Set(d, -1.44269504088896341f)));
  } else {
    e = ExpOfNegative(d, clamped);
  }
  const V silu = hn::Div(g, hn::Add(hn::Set(d, 1.0f), e));
  return hn::IfThenZeroElse(hn::Lt(g, hn::Neg(limit)), silu);
}

struct AddOp {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    return hn::Add(a, b);
  }
};
struct MulOp {
  template <class D, class V>
  HWY_INLINE V operator()(D, V a, V b) const {
    return hn::Mul(a, b);
  }
};
template <bool kCoarse>
struct SwigluOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    return hn::Mul(a, Silu<kCoarse>(d, b));
  }
};
struct SiluOp {  // of a; b is ignored
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V) const {
    return Silu<false>(d, a);
  }
};

template <class Op, typename T>
HWY_INLINE void Rows(const void* a_ptr, const void* b_ptr, std::int64_t n, void* out_ptr,
                     bool stream) {
  const T* a = static_cast<const T*>(a_ptr);
  const T* b = static_cast<const T*>(b_ptr);
  T* out = static_cast<T*>(out_ptr);
  const hn::ScalableTag<float> d;
  const Op op;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  if constexpr (std::is_same_v<T, BF16>) {
    // Two vectors per step from 32-bit pairs split in place: fewer operations than widening.
    const auto* a16 = reinterpret_cast<const std::uint16_t*>(a);
    const auto* b16 = reinterpret_cast<const std::uint16_t*>(b);
    auto* out16 = reinterpret_cast<std::uint16_t*>(out);
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
      hn::Vec<decltype(d)> a_even, a_odd, b_even, b_odd;
      LoadBF16PairsAsF32(d, a16 + i, a_even, a_odd);
      LoadBF16PairsAsF32(d, b16 + i, b_even, b_odd);
      StoreF32PairsAsBF16(d, op(d, a_even, b_even), op(d, a_odd, b_odd), out16 + i, stream);
    }
  }
  for (; i + lanes <= n; i += lanes) {
    StoreF32(d, op(d, LoadF32(d, a + i), LoadF32(d, b + i)), out + i, stream);
  }
  if (stream) end_streaming_stores();
  if (i < n) {
    // The tail through one full vector of stack copies: the same code path for every element.
    T ta[hn::MaxLanes(d)] = {};
    T tb[hn::MaxLanes(d)] = {};
    const std::int64_t rest = n - i;
    for (std::int64_t j = 0; j < rest; ++j) {
      ta[j] = a[i + j];
      tb[j] = b[i + j];
    }
    StoreF32(d, op(d, LoadF32(d, ta), LoadF32(d, tb)), ta);
    for (std::int64_t j = 0; j < rest; ++j) out[i + j] = ta[j];
  }
}

void AddF32(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<AddOp, float>(a, b, n, out, stream);
}
void AddF16(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<AddOp, F16>(a, b, n, out, stream);
}
void AddBF16(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<AddOp, BF16>(a, b, n, out, stream);
}
void MulF32(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<MulOp, float>(a, b, n, out, stream);
}
void MulF16(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<MulOp, F16>(a, b, n, out, stream);
}
void MulBF16(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<MulOp, BF16>(a, b, n, out, stream);
}
void SwigluF32(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<SwigluOp<false>, float>(a, b, n, out, stream);
}
void SwigluF16(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<SwigluOp<true>, F16>(a, b, n, out, stream);
}
void SwigluBF16(const void* a, const void* b, std::int64_t n, void* out, bool stream) {
  Rows<SwigluOp<true>, BF16>(a, b, n, out, stream);
}
void SiluF32(const float* x, std::int64_t n, float* out) {
  Rows<SiluOp, float>(x, x, n, out, false);
}

// The target this copy was compiled for: what dispatch picked, for simd_dispatched_target().
std::int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(AddF32);
HWY_EXPORT(AddF16);
HWY_EXPORT(AddBF16);
HWY_EXPORT(MulF32);
HWY_EXPORT(MulF16);
HWY_EXPORT(MulBF16);
HWY_EXPORT(SwigluF32);
HWY_EXPORT(SwigluF16);
HWY_EXPORT(SwigluBF16);
HWY_EXPORT(SiluF32);
HWY_EXPORT(CompiledTarget);

namespace {

using RowsFn = void (*)(const void*, const void*, std::int64_t, void*, bool);

// The kernel for the best target of this CPU (looked up per call: a table index, no branch
// per element).
RowsFn select(ElementwiseOp op, DataType dtype) {
  int column = 0;
  switch (dtype) {
    case DataType::kFloat32:
      column = 0;
      break;
    case DataType::kFloat16:
      column = 1;
      break;
    case DataType::kBFloat16:
      column = 2;
      break;
    default:
      throw_internal_error("cpu elementwise kernels", "dtype is not float32/float16/bfloat16");
  }
  switch (op) {
    case ElementwiseOp::kAdd:
      return column == 0   ? TILEOPS_DYNAMIC_DISPATCH(AddF32)
             : column == 1 ? TILEOPS_DYNAMIC_DISPATCH(AddF16)
                           : TILEOPS_DYNAMIC_DISPATCH(AddBF16);
    case ElementwiseOp::kMul:
      return column == 0   ? TILEOPS_DYNAMIC_DISPATCH(MulF32)
             : column == 1 ? TILEOPS_DYNAMIC_DISPATCH(MulF16)
                           : TILEOPS_DYNAMIC_DISPATCH(MulBF16);
    case ElementwiseOp::kSwiglu:
      return column == 0   ? TILEOPS_DYNAMIC_DISPATCH(SwigluF32)
             : column == 1 ? TILEOPS_DYNAMIC_DISPATCH(SwigluF16)
                           : TILEOPS_DYNAMIC_DISPATCH(SwigluBF16);
  }
  throw_internal_error("cpu elementwise kernels", "unknown operation");
}

}  // namespace

void elementwise_rows(ElementwiseOp op, DataType dtype, const void* a, const void* b,
                      std::int64_t n, void* out, bool stream) {
  if (n > 0) select(op, dtype)(a, b, n, out, stream);
}

void silu_f32(const float* x, std::int64_t n, float* out) {
  if (n > 0) TILEOPS_DYNAMIC_DISPATCH(SiluF32)(x, n, out);
}

namespace {

// Inside the export's namespace: HWY_DYNAMIC_DISPATCH takes an unqualified name.
std::int64_t compiled_target() { return TILEOPS_DYNAMIC_DISPATCH(CompiledTarget)(); }

}  // namespace

}  // namespace tileops::ops::cpu

namespace tileops {

std::string simd_dispatched_target() { return hwy::TargetName(ops::cpu::compiled_target()); }

}  // namespace tileops
#endif  // HWY_ONCE
