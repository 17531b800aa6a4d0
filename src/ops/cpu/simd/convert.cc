// Highway kernels for float32 <-> {float16, bfloat16} rows, compiled once per SIMD target and
// dispatched at run time.
#include "src/ops/cpu/simd/convert.h"

#include <cstring>

#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void LoadF16(const std::uint16_t* src, std::int64_t n, float* dst) {
  if constexpr (!kExactF16Vectors) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = float16_to_float(src[i]);
    return;
  }
  const hn::ScalableTag<float> df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(LoadF16AsF32(df, src + i), df, dst + i);
  for (; i < n; ++i) dst[i] = float16_to_float(src[i]);
}

void StoreF16(const float* src, std::int64_t n, std::uint16_t* dst) {
  if constexpr (!kExactF16Vectors) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = float_to_float16(src[i]);
    return;
  }
  const hn::ScalableTag<float> df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) StoreF32AsF16(df, hn::LoadU(df, src + i), dst + i);
  for (; i < n; ++i) dst[i] = float_to_float16(src[i]);
}

void LoadBF16(const std::uint16_t* src, std::int64_t n, float* dst) {
  const hn::ScalableTag<float> df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(LoadBF16AsF32(df, src + i), df, dst + i);
  for (; i < n; ++i) dst[i] = bfloat16_to_float(src[i]);
}

void StoreBF16(const float* src, std::int64_t n, std::uint16_t* dst) {
  const hn::ScalableTag<float> df;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) StoreF32AsBF16(df, hn::LoadU(df, src + i), dst + i);
  for (; i < n; ++i) dst[i] = float_to_bfloat16(src[i]);
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(LoadF16);
HWY_EXPORT(StoreF16);
HWY_EXPORT(LoadBF16);
HWY_EXPORT(StoreBF16);

void load_f32(const void* src, DataType dtype, std::int64_t stride, std::int64_t n, float* dst) {
  if (n <= 0) return;
  if (stride == 1) {
    switch (dtype) {
      case DataType::kFloat32:
        std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
        return;
      case DataType::kFloat16:
        TILEOPS_DYNAMIC_DISPATCH(LoadF16)(static_cast<const std::uint16_t*>(src), n, dst);
        return;
      case DataType::kBFloat16:
        TILEOPS_DYNAMIC_DISPATCH(LoadBF16)(static_cast<const std::uint16_t*>(src), n, dst);
        return;
      default:
        break;
    }
  }
  switch (dtype) {
    case DataType::kFloat32: {
      const float* s = static_cast<const float*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = s[i * stride];
      return;
    }
    case DataType::kFloat16: {
      const std::uint16_t* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = float16_to_float(s[i * stride]);
      return;
    }
    case DataType::kBFloat16: {
      const std::uint16_t* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bfloat16_to_float(s[i * stride]);
      return;
    }
    default:
      throw_internal_error("cpu convert", "dtype is not float32/float16/bfloat16");
  }
}

void store_f32(const float* src, void* dst, DataType dtype, std::int64_t stride, std::int64_t n) {
  if (n <= 0) return;
  if (stride == 1) {
    switch (dtype) {
      case DataType::kFloat32:
        if (static_cast<const void*>(src) != dst) {
          std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
        }
        return;
      case DataType::kFloat16:
        TILEOPS_DYNAMIC_DISPATCH(StoreF16)(src, n, static_cast<std::uint16_t*>(dst));
        return;
      case DataType::kBFloat16:
        TILEOPS_DYNAMIC_DISPATCH(StoreBF16)(src, n, static_cast<std::uint16_t*>(dst));
        return;
      default:
        break;
    }
  }
  switch (dtype) {
    case DataType::kFloat32: {
      float* d = static_cast<float*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i * stride] = src[i];
      return;
    }
    case DataType::kFloat16: {
      std::uint16_t* d = static_cast<std::uint16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i * stride] = float_to_float16(src[i]);
      return;
    }
    case DataType::kBFloat16: {
      std::uint16_t* d = static_cast<std::uint16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i * stride] = float_to_bfloat16(src[i]);
      return;
    }
    default:
      throw_internal_error("cpu convert", "dtype is not float32/float16/bfloat16");
  }
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
