// Highway kernels of the elementwise operators, compiled once per SIMD target and dispatched at
// run time: one loop template over the storage type and the operation.
#include "src/ops/cpu/simd/elementwise_kernels.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "src/ops/cpu/streaming.h"
#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/elementwise_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/fast_exp-inl.h"
#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// How closely silu's e^-g is computed: to 2 ulp (float32 results), or as 2^(-g·log2 e) to 3e-6
// (float16) or 1.1e-4 (bfloat16), which their rounding hides (fast_exp-inl.h).
enum class ExpFit { kFine, kCoarse, kRough };

// silu(g) = g / (1 + e^-g). For g > 87.3, e^-g vanishes against 1, so the exponent is clamped
// there (silu = g); for g < -87.3, |silu(g)| < 1e-35 and the result is 0, whatever the
// out-of-range exponent gave. NaN propagates through the division by g's own value.
// (An approximate reciprocal with a Newton step measured no faster than the divide here.)
template <ExpFit kFit, class D, class V>
HWY_INLINE V Silu(D d, V g) {
  const V limit = hn::Set(d, 87.3f);
  const V clamped = hn::Min(g, limit);
  V e;
  if constexpr (kFit == ExpFit::kFine) {
    e = ExpOfNegative(d, clamped);
  } else if constexpr (kFit == ExpFit::kCoarse) {
    e = Exp2Coarse(d, hn::Mul(clamped, hn::Set(d, -1.44269504088896341f)));
  } else {
    e = Exp2Rough(d, hn::Mul(clamped, hn::Set(d, -1.44269504088896341f)));
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
template <ExpFit kFit>
struct SwigluOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V b) const {
    return hn::Mul(a, Silu<kFit>(d, b));
  }
};
struct SiluOp {  // of a; b is ignored
  template <class D, class V>
  HWY_INLINE V operator()(D d, V a, V) const {
    return Silu<ExpFit::kFine>(d, a);
  }
};

// With kNextRow (silu_and_mul), the same block of the next row (`next_row_bytes` past both
// operands) is prefetched while this one computes, two lines per 64 bytes of each operand, in
// memory order (the lower operand's block first). Each half-row starts a stream on pages the
// hardware prefetcher has not seen; a whole row ahead hides that where a fixed distance within
// the half did not (bench/results/cpu-tuning.md). A prefetch past the tensor's end is harmless.
template <class E, class Op, bool kNextRow = false>
HWY_INLINE void Rows(const void* a_ptr, const void* b_ptr, std::int64_t n, void* out_ptr,
                     bool stream, std::int64_t next_row_bytes = 0) {
  using T = typename E::T;
  const T* a = static_cast<const T*>(a_ptr);
  const T* b = static_cast<const T*>(b_ptr);
  T* out = static_cast<T*>(out_ptr);
  const hn::ScalableTag<float> d;
  const Op op;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  if constexpr (E::kPairs) {
    // Two vectors per step from 32-bit pairs split in place: fewer operations than widening.
    constexpr std::int64_t kLine = 64;
    constexpr std::int64_t kSize = sizeof(T);
    // Addresses as integers: the next row may lie past the tensor, where no pointer may point.
    const auto a_at = reinterpret_cast<std::uintptr_t>(a);
    const auto b_at = reinterpret_cast<std::uintptr_t>(b);
    const std::uintptr_t low = std::min(a_at, b_at) + static_cast<std::uintptr_t>(next_row_bytes);
    const std::uintptr_t high = std::max(a_at, b_at) + static_cast<std::uintptr_t>(next_row_bytes);
    const std::int64_t block_bytes = n * kSize;
    const bool ahead = kNextRow && next_row_bytes != 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
      // A step is at most 64 bytes of each operand below AVX-512.
      if (ahead && (i * kSize) % kLine == 0) {
        const std::int64_t p = 2 * i * kSize;
        const std::uintptr_t at = p < block_bytes ? low + p : high + (p - block_bytes);
        __builtin_prefetch(reinterpret_cast<const void*>(at), 0, 3);
        __builtin_prefetch(reinterpret_cast<const void*>(at + kLine), 0, 3);
      }
      hn::Vec<decltype(d)> a_even, a_odd, b_even, b_odd;
      E::LoadPairs(d, a + i, a_even, a_odd);
      E::LoadPairs(d, b + i, b_even, b_odd);
      // a and b are bfloat16: no NaN check on the results (StorePairsOfOwnMath).
      E::StorePairsOfOwnMath(d, op(d, a_even, b_even), op(d, a_odd, b_odd), out + i, stream);
    }
  }
  ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
    Store<E>(d, op(d, Load<E>(d, a + j, part), Load<E>(d, b + j, part)), out + j, part, stream);
  });
  if (stream) end_streaming_stores();
}

// float16/bfloat16 results are rounded to 16 bits, so swiglu's exponential may be coarser.
template <class E>
using SwigluFor = SwigluOp<std::is_same_v<E, F32Elem>   ? ExpFit::kFine
                           : std::is_same_v<E, F16Elem> ? ExpFit::kCoarse
                                                        : ExpFit::kRough>;

void Elementwise(ElementwiseOp op, DataType dtype, const void* a, const void* b, std::int64_t n,
                 void* out, bool stream, std::int64_t next_row_bytes) {
  VisitFloat(dtype, "cpu elementwise kernels", [&](auto elem) {
    using E = decltype(elem);
    switch (op) {
      case ElementwiseOp::kAdd:
        return Rows<E, AddOp>(a, b, n, out, stream);
      case ElementwiseOp::kMul:
        return Rows<E, MulOp>(a, b, n, out, stream);
      case ElementwiseOp::kSwiglu:
        return Rows<E, SwigluFor<E>>(a, b, n, out, stream);
      case ElementwiseOp::kSwigluOfHalves:
        return Rows<E, SwigluFor<E>, true>(a, b, n, out, stream, next_row_bytes);
    }
    throw_internal_error("cpu elementwise kernels", "unknown operation");
  });
}

void SiluF32(const float* x, std::int64_t n, float* out) {
  Rows<F32Elem, SiluOp>(x, x, n, out, false);
}

// The target this copy was compiled for: what dispatch picked, for simd_dispatched_target().
std::int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(Elementwise);
HWY_EXPORT(SiluF32);
HWY_EXPORT(CompiledTarget);

void elementwise_rows(ElementwiseOp op, DataType dtype, const void* a, const void* b,
                      std::int64_t n, void* out, bool stream, std::int64_t next_row_bytes) {
  if (n > 0) {
    TILEOPS_DYNAMIC_DISPATCH(Elementwise)(op, dtype, a, b, n, out, stream, next_row_bytes);
  }
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

bool simd_dispatches_avx512() {
  return (ops::cpu::compiled_target() & (HWY_AVX3 | HWY_AVX3_DL)) != 0;
}

}  // namespace tileops
#endif  // HWY_ONCE
