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

// Weight element kinds of a packed block, as packed_rows_block reads them.
enum class PackedKind { kF32, kF16, kBF16Pairs };

// Rows of x as rows, the 16 weight rows of the group as the lanes (kV vectors per step): each
// weight vector is loaded once and multiplies kM broadcast x elements, so a step costs kM · kV
// multiply-adds and nothing is spent on padding rows of x.
template <PackedKind kKind, int kM>
struct PackedRows {
  static constexpr std::size_t kLanes = hn::MaxLanes(DF());
  static constexpr int kV = static_cast<int>(16 / kLanes);
  // With few accumulators, independent sets of them cover the multiply-add latency.
  static constexpr int kChains = kM * kV >= 8 ? 1 : 8 / (kM * kV);
  using Sums = hn::Vec<DF>[kM][kV];

  // The 16 weight lanes of K step p (K pair p for bfloat16) times x[i][p] (x[i][2p] and
  // x[i][2p + 1]), into `sum`.
  static HWY_INLINE void Step(const float* const* HWY_RESTRICT x, const void* HWY_RESTRICT w,
                              std::int64_t p, bool fetch, Sums& sum) {
    const DF d;
    if constexpr (kKind == PackedKind::kBF16Pairs) {
      const hn::RebindToUnsigned<DF> du;
      const auto* pairs = static_cast<const std::uint32_t*>(w) + p * 16;
      if (fetch) __builtin_prefetch(pairs + kFetchFloats, 0, 2);
      const auto high = hn::Set(du, 0xFFFF0000u);
      hn::Vec<DF> even[kV], odd[kV];
      for (int v = 0; v < kV; ++v) {
        const auto bits = hn::LoadU(du, pairs + v * kLanes);
        even[v] = hn::BitCast(d, hn::ShiftLeft<16>(bits));
        odd[v] = hn::BitCast(d, hn::And(bits, high));
      }
      for (int i = 0; i < kM; ++i) {
        const auto xe = hn::Set(d, x[i][2 * p]), xo = hn::Set(d, x[i][2 * p + 1]);
        for (int v = 0; v < kV; ++v) {
          sum[i][v] = hn::MulAdd(odd[v], xo, hn::MulAdd(even[v], xe, sum[i][v]));
        }
      }
    } else {
      hn::Vec<DF> wv[kV];
      if constexpr (kKind == PackedKind::kF32) {
        const float* wp = static_cast<const float*>(w) + p * 16;
        if (fetch) __builtin_prefetch(wp + kFetchFloats, 0, 2);
        for (int v = 0; v < kV; ++v) wv[v] = hn::LoadU(d, wp + v * kLanes);
      } else {
        const auto* wp = static_cast<const std::uint16_t*>(w) + p * 16;
        if (fetch && p % 2 == 0) __builtin_prefetch(wp + 2 * kFetchFloats, 0, 2);
        for (int v = 0; v < kV; ++v) wv[v] = LoadF16AsF32(d, wp + v * kLanes);
      }
      for (int i = 0; i < kM; ++i) {
        const auto xv = hn::Set(d, x[i][p]);
        for (int v = 0; v < kV; ++v) sum[i][v] = hn::MulAdd(wv[v], xv, sum[i][v]);
      }
    }
  }

  static void Block(const float* const* HWY_RESTRICT x, const void* HWY_RESTRICT w,
                    std::int64_t steps, float* HWY_RESTRICT acc, std::int64_t ld_acc,
                    bool accumulate, bool fetch) {
    const DF d;
    hn::Vec<DF> sum[kChains][kM][kV];
    for (auto& chain : sum) {
      for (auto& row : chain) {
        for (auto& v : row) v = hn::Zero(d);
      }
    }
    const std::int64_t n = kKind == PackedKind::kBF16Pairs ? steps / 2 : steps;
    std::int64_t p = 0;
    for (; p + kChains <= n; p += kChains) {
      for (int c = 0; c < kChains; ++c) Step(x, w, p + c, fetch, sum[c]);
    }
    for (; p < n; ++p) Step(x, w, p, fetch, sum[0]);
    for (int i = 0; i < kM; ++i) {
      for (int v = 0; v < kV; ++v) {
        auto total = sum[0][i][v];
        for (int c = 1; c < kChains; ++c) total = hn::Add(total, sum[c][i][v]);
        float* out = acc + i * ld_acc + v * static_cast<std::int64_t>(kLanes);
        hn::StoreU(accumulate ? hn::Add(total, hn::LoadU(d, out)) : total, d, out);
      }
    }
  }
};

// Rows of x one PackedRows pass takes: with 8 lanes a float32 pass of 6 rows keeps 12
// accumulators (two vectors of 16 weight rows each), 2 weight vectors and a broadcast in AVX2's 16
// registers, where 4 rows leave exactly the 8 chains two FMA pipes need and stall on any delay.
// 16-bit blocks widen in the kernel and need the registers for that: 6 rows of them spill, and
// widening a block once into float32 for 6-row passes measured slower still, so they stay at 4.
int PackedRowsPassMax(DataType dtype) {
  return dtype == DataType::kFloat32 && hn::MaxLanes(DF()) == 8 ? 6 : 4;
}

// Up to this many rows of x, linear_packed keeps them as rows (PackedRows). Where 16 float32 lanes
// make a vector, the 16-row kernels (x rows as the lanes) take over beyond 4; with fewer lanes they
// take several passes and unpack 16-bit blocks through memory, and lose at every M up to 16
// (bench/results/cpu-tuning.md).
std::int64_t PackedRowsPathMax() { return hn::MaxLanes(DF()) >= 16 ? 4 : 16; }

template <PackedKind kKind>
void PackedRowsKind(const float* const* x, int m, const void* w, std::int64_t steps, float* acc,
                    std::int64_t ld_acc, bool accumulate, bool fetch) {
  switch (m) {
    case 1:
      return PackedRows<kKind, 1>::Block(x, w, steps, acc, ld_acc, accumulate, fetch);
    case 2:
      return PackedRows<kKind, 2>::Block(x, w, steps, acc, ld_acc, accumulate, fetch);
    case 3:
      return PackedRows<kKind, 3>::Block(x, w, steps, acc, ld_acc, accumulate, fetch);
    case 4:
      return PackedRows<kKind, 4>::Block(x, w, steps, acc, ld_acc, accumulate, fetch);
    default:
      break;
  }
  if constexpr (kKind == PackedKind::kF32) {
    if (m == 5) return PackedRows<kKind, 5>::Block(x, w, steps, acc, ld_acc, accumulate, fetch);
    return PackedRows<kKind, 6>::Block(x, w, steps, acc, ld_acc, accumulate, fetch);
  }
}

void PackedRowsBlock(const float* const* x, int m, const void* w, DataType dtype,
                     std::int64_t steps, float* acc, std::int64_t ld_acc, bool accumulate,
                     bool fetch) {
  switch (dtype) {
    case DataType::kFloat32:
      return PackedRowsKind<PackedKind::kF32>(x, m, w, steps, acc, ld_acc, accumulate, fetch);
    case DataType::kFloat16:
      return PackedRowsKind<PackedKind::kF16>(x, m, w, steps, acc, ld_acc, accumulate, fetch);
    default:
      return PackedRowsKind<PackedKind::kBF16Pairs>(x, m, w, steps, acc, ld_acc, accumulate, fetch);
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
HWY_EXPORT(PackedRowsBlock);
HWY_EXPORT(PackedRowsPathMax);
HWY_EXPORT(PackedRowsPassMax);

void packed_block_f32(const float* x, const float* w, std::int64_t steps, float* acc,
                      bool accumulate, bool fetch) {
  TILEOPS_DYNAMIC_DISPATCH(PackedBlockF32)(x, w, steps, acc, accumulate, fetch);
}

void packed_half_blocks_f32(const float* x0, const float* x1, const float* w, std::int64_t steps,
                            float* acc0, float* acc1, bool accumulate, bool fetch) {
  TILEOPS_DYNAMIC_DISPATCH(PackedHalfBlocksF32)(x0, x1, w, steps, acc0, acc1, accumulate, fetch);
}

std::int64_t packed_rows_path_max() { return TILEOPS_DYNAMIC_DISPATCH(PackedRowsPathMax)(); }

int packed_rows_pass_max(DataType dtype) {
  return TILEOPS_DYNAMIC_DISPATCH(PackedRowsPassMax)(dtype);
}

void packed_rows_block(const float* const* x, int m, const void* w, DataType dtype,
                       std::int64_t steps, float* acc, std::int64_t ld_acc, bool accumulate,
                       bool fetch) {
  if ((dtype != DataType::kFloat32 && dtype != DataType::kFloat16 &&
       dtype != DataType::kBFloat16) ||
      m < 1 || m > packed_rows_pass_max(dtype)) {
    throw_internal_error("packed_rows_block",
                         "1 to packed_rows_pass_max() rows of a float32/float16/bfloat16 block");
  }
  TILEOPS_DYNAMIC_DISPATCH(PackedRowsBlock)(x, m, w, dtype, steps, acc, ld_acc, accumulate, fetch);
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
