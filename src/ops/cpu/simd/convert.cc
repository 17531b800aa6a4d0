// Highway kernels for float32 <-> {float16, bfloat16} rows, compiled once per SIMD target and
// dispatched at run time.
#include "src/ops/cpu/simd/convert.h"

#include <cstring>
#include <type_traits>

#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Contiguous rows of any float dtype to and from float32, one export each.
void LoadRow(DataType dtype, const void* src, std::int64_t n, float* dst) {
  VisitFloat(dtype, "cpu convert", [&](auto elem) {
    using E = decltype(elem);
    const auto* s = static_cast<const typename E::T*>(src);
    const hn::ScalableTag<float> d;
    ForEachVector(d, 0, n, [&](std::int64_t i, auto part) {
      Store<F32Elem>(d, Load<E>(d, s + i, part), dst + i, part);
    });
  });
}

void StoreRow(DataType dtype, const float* src, std::int64_t n, void* dst) {
  VisitFloat(dtype, "cpu convert", [&](auto elem) {
    using E = decltype(elem);
    auto* t = static_cast<typename E::T*>(dst);
    const hn::ScalableTag<float> d;
    const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
    std::int64_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {  // Store2 packs bfloat16 two vectors at a time
      E::Store2(d, hn::LoadU(d, src + i), hn::LoadU(d, src + i + lanes), t + i);
    }
    ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
      Store<E>(d, Load<F32Elem>(d, src + j, part), t + j, part);
    });
  });
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(LoadRow);
HWY_EXPORT(StoreRow);

namespace {

// Element `dtype` of a strided row, by the scalar conversions of core/float16.h.
template <class F>
void visit_scalar(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat32:
      return f(
          static_cast<const float*>(nullptr), [](float x) { return x; }, [](float x) { return x; });
    case DataType::kFloat16:
      return f(static_cast<const std::uint16_t*>(nullptr), float16_to_float, float_to_float16);
    case DataType::kBFloat16:
      return f(static_cast<const std::uint16_t*>(nullptr), bfloat16_to_float, float_to_bfloat16);
    default:
      throw_internal_error("cpu convert", "dtype is not float32/float16/bfloat16");
  }
}

}  // namespace

void load_f32(const void* src, DataType dtype, std::int64_t stride, std::int64_t n, float* dst) {
  if (n <= 0) return;
  if (stride == 1) {
    if (dtype == DataType::kFloat32) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
    } else {
      TILEOPS_DYNAMIC_DISPATCH(LoadRow)(dtype, src, n, dst);
    }
    return;
  }
  visit_scalar(dtype, [&](auto tag, auto to_f32, auto) {
    const auto* s = static_cast<decltype(tag)>(src);
    for (std::int64_t i = 0; i < n; ++i) dst[i] = to_f32(s[i * stride]);
  });
}

void store_f32(const float* src, void* dst, DataType dtype, std::int64_t stride, std::int64_t n) {
  if (n <= 0) return;
  if (stride == 1) {
    if (dtype != DataType::kFloat32) {
      TILEOPS_DYNAMIC_DISPATCH(StoreRow)(dtype, src, n, dst);
    } else if (static_cast<const void*>(src) != dst) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
    }
    return;
  }
  visit_scalar(dtype, [&](auto tag, auto, auto from_f32) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    T* t = static_cast<T*>(dst);
    for (std::int64_t i = 0; i < n; ++i) t[i * stride] = from_f32(src[i]);
  });
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
