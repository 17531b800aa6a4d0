#include "src/ops/cpu/simd/packed_linear_kernels.h"

#include <cstddef>

#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/packed_linear_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// How far ahead of its use the weight stream is requested into L2 (bench/results/cpu-tuning.md).
constexpr std::int64_t kFetchFloats = 2048;

// 16 accumulators of `lanes` x rows each: all 16 x rows in one pass on AVX-512, two passes (the
// block then comes from L1) with 8 lanes.
void PackedBlockF32(const float* HWY_RESTRICT x, const float* HWY_RESTRICT w, std::int64_t steps,
                    float* HWY_RESTRICT acc, bool accumulate, bool fetch) {
  const DF d;
  const std::size_t lanes = hn::Lanes(d);
  for (std::size_t i0 = 0; i0 < 16; i0 += lanes) {
    hn::Vec<DF> sum[16];
    for (auto& s : sum) s = hn::Zero(d);
    const bool fetch_now = fetch && i0 == 0;
    for (std::int64_t p = 0; p < steps; ++p) {
      const float* wp = w + p * 16;  // one 64-byte line per step
      if (fetch_now) __builtin_prefetch(wp + kFetchFloats, 0, 2);
      const auto xv = hn::LoadU(d, x + p * 16 + i0);
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) sum[j] = hn::MulAdd(hn::Set(d, wp[j]), xv, sum[j]);
    }
    for (int j = 0; j < 16; ++j) {
      float* out = acc + j * 16 + i0;
      hn::StoreU(accumulate ? hn::Add(sum[j], hn::LoadU(d, out)) : sum[j], d, out);
    }
  }
}

void PackedHalfBlocksF32(const float* HWY_RESTRICT x0, const float* HWY_RESTRICT x1,
                         const float* HWY_RESTRICT w, std::int64_t steps, float* HWY_RESTRICT acc0,
                         float* HWY_RESTRICT acc1, bool accumulate, bool fetch) {
  const DF d;
  const std::size_t lanes = hn::Lanes(d);
  for (std::size_t i0 = 0; i0 < 16; i0 += lanes) {
    hn::Vec<DF> sum0[8], sum1[8];
    for (int j = 0; j < 8; ++j) sum0[j] = sum1[j] = hn::Zero(d);
    const bool fetch_now = fetch && i0 == 0;
    for (std::int64_t p = 0; p < steps; ++p) {
      const float* wp = w + p * 16;
      if (fetch_now) __builtin_prefetch(wp + kFetchFloats, 0, 2);
      const auto xv0 = hn::LoadU(d, x0 + p * 16 + i0), xv1 = hn::LoadU(d, x1 + p * 16 + i0);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const auto wv = hn::Set(d, wp[j]);
        sum0[j] = hn::MulAdd(wv, xv0, sum0[j]);
        sum1[j] = hn::MulAdd(wv, xv1, sum1[j]);
      }
    }
    for (int j = 0; j < 8; ++j) {
      float* out0 = acc0 + j * 16 + i0;
      float* out1 = acc1 + j * 16 + i0;
      hn::StoreU(accumulate ? hn::Add(sum0[j], hn::LoadU(d, out0)) : sum0[j], d, out0);
      hn::StoreU(accumulate ? hn::Add(sum1[j], hn::LoadU(d, out1)) : sum1[j], d, out1);
    }
  }
}

// LoadF16AsF32: Highway's emulated promotion (SSE4, SCALAR) turns Inf and NaN into finite values.
void UnpackBlockF16(const void* src, std::int64_t steps, float* dst) {
  const DF d;
  const auto* h = static_cast<const std::uint16_t*>(src);
  const std::int64_t n = steps * 16, lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t i = 0; i < n; i += lanes) hn::StoreU(LoadF16AsF32(d, h + i), d, dst + i);
}

// Pair (k, k + 1) of weight row j is one 32-bit lane: its low half is k, its high half k + 1.
void UnpackBlockBF16(const void* src, std::int64_t steps, float* dst) {
  const hn::ScalableTag<std::uint32_t> du;
  const DF d;
  const auto* pairs = static_cast<const std::uint32_t*>(src);
  const auto high = hn::Set(du, 0xFFFF0000u);
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(du));
  for (std::int64_t q = 0; q < steps / 2; ++q) {
    for (std::int64_t j = 0; j < 16; j += lanes) {
      const auto v = hn::LoadU(du, pairs + q * 16 + j);
      hn::StoreU(hn::BitCast(d, hn::ShiftLeft<16>(v)), d, dst + 2 * q * 16 + j);
      hn::StoreU(hn::BitCast(d, hn::And(v, high)), d, dst + (2 * q + 1) * 16 + j);
    }
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(PackedBlockF32);
HWY_EXPORT(PackedHalfBlocksF32);
HWY_EXPORT(UnpackBlockF16);
HWY_EXPORT(UnpackBlockBF16);

void packed_block_f32(const float* x, const float* w, std::int64_t steps, float* acc,
                      bool accumulate, bool fetch) {
  TILEOPS_DYNAMIC_DISPATCH(PackedBlockF32)(x, w, steps, acc, accumulate, fetch);
}

void packed_half_blocks_f32(const float* x0, const float* x1, const float* w, std::int64_t steps,
                            float* acc0, float* acc1, bool accumulate, bool fetch) {
  TILEOPS_DYNAMIC_DISPATCH(PackedHalfBlocksF32)(x0, x1, w, steps, acc0, acc1, accumulate, fetch);
}

void unpack_block_f32(const void* src, DataType dtype, std::int64_t steps, float* dst) {
  switch (dtype) {
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(UnpackBlockF16)(src, steps, dst);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(UnpackBlockBF16)(src, steps, dst);
    default:
      throw_internal_error("unpack_block_f32", "float16 or bfloat16 blocks only");
  }
}

}  // namespace tileops::ops::cpu
#endif
