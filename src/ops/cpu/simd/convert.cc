// Highway kernels for float32 <-> {float16, bfloat16} rows, compiled once per SIMD target and
// dispatched at run time.
#include "src/ops/cpu/simd/convert.h"

#include <cstring>

#include "tileops/core/error.h"
#include "tileops/core/float16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Highway 1.0.3 emulates float16 <-> float32 on targets without hardware conversions (x86
// SSE4 and older, SCALAR/EMU128), and the emulation truncates instead of rounding and turns
// Inf/NaN into finite values. Only x86 AVX2+ (F16C) and Arm use vectors; the others use the
// exact scalar conversions.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || HWY_ARCH_ARM
constexpr bool kExactF16Vectors = true;
#else
constexpr bool kExactF16Vectors = false;
#endif

void LoadF16(const std::uint16_t* src, std::int64_t n, float* dst) {
  if constexpr (!kExactF16Vectors) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = float16_to_float(src[i]);
    return;
  }
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto h = hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(src + i));
    hn::StoreU(hn::PromoteTo(df, h), df, dst + i);
  }
  for (; i < n; ++i) dst[i] = float16_to_float(src[i]);
}

void StoreF16(const float* src, std::int64_t n, std::uint16_t* dst) {
  if constexpr (!kExactF16Vectors) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = float_to_float16(src[i]);
    return;
  }
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(df, src + i);
    hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(dst + i));
  }
  for (; i < n; ++i) dst[i] = float_to_float16(src[i]);
}

void LoadBF16(const std::uint16_t* src, std::int64_t n, float* dst) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<std::uint32_t, decltype(df)> du32;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto wide = hn::PromoteTo(du32, hn::LoadU(du16, src + i));
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(wide)), df, dst + i);
  }
  for (; i < n; ++i) dst[i] = bfloat16_to_float(src[i]);
}

// Round-to-nearest-even in integer arithmetic (Highway 1.0's DemoteTo to bfloat16 truncates).
void StoreBF16(const float* src, std::int64_t n, std::uint16_t* dst) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<std::uint32_t, decltype(df)> du32;
  const hn::Rebind<std::int32_t, decltype(df)> di32;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const auto bias = hn::Set(du32, 0x7fffu);
  const auto one = hn::Set(du32, 1u);
  const auto quiet = hn::Set(du32, 0x00400000u);
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(df, src + i);
    const auto u = hn::BitCast(du32, v);
    const auto rounded = hn::Add(u, hn::Add(bias, hn::And(hn::ShiftRight<16>(u), one)));
    // NaN test on the bits: Highway 1.0.3's float Ne is ordered on AVX2/AVX3 (false for NaN).
    const auto abs = hn::BitCast(di32, hn::And(u, hn::Set(du32, 0x7fffffffu)));
    const auto nan = hn::RebindMask(du32, hn::Gt(abs, hn::Set(di32, 0x7f800000)));
    const auto bits = hn::ShiftRight<16>(hn::IfThenElse(nan, hn::Or(u, quiet), rounded));
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, bits)), du16, dst + i);
  }
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
        HWY_DYNAMIC_DISPATCH(LoadF16)(static_cast<const std::uint16_t*>(src), n, dst);
        return;
      case DataType::kBFloat16:
        HWY_DYNAMIC_DISPATCH(LoadBF16)(static_cast<const std::uint16_t*>(src), n, dst);
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
        HWY_DYNAMIC_DISPATCH(StoreF16)(src, n, static_cast<std::uint16_t*>(dst));
        return;
      case DataType::kBFloat16:
        HWY_DYNAMIC_DISPATCH(StoreBF16)(src, n, static_cast<std::uint16_t*>(dst));
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
