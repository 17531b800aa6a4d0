#include "src/ops/cpu/simd/quantized_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/quantized_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr int kTile = 4;  // kQuantizedTileRows

// A block's scales and zero points (z = 8 for symmetric int4, 0 for int8).
struct BlockMeta {
  float scale[kTile];
  float zero[kTile];
};

template <int kBits, bool kZeros>
HWY_INLINE BlockMeta MetaOf(const std::uint8_t* block) {
  BlockMeta m;
  std::memcpy(m.scale, block, sizeof(m.scale));
  if constexpr (kZeros) {
    std::memcpy(m.zero, block + sizeof(m.scale), sizeof(m.zero));
  } else {
    for (float& z : m.zero) z = kBits == 8 ? 0.0f : 8.0f;
  }
  return m;
}

// Lanes of int8 codes at p as float32.
HWY_INLINE VF Int8Codes(DF d, const std::uint8_t* p) {
  const hn::Rebind<std::int32_t, DF> di;
  const hn::Rebind<std::int8_t, DF> di8;
  return hn::ConvertTo(d,
                       hn::PromoteTo(di, hn::LoadU(di8, reinterpret_cast<const std::int8_t*>(p))));
}

// Lanes of bytes at p split into their low and high nibbles as float32.
HWY_INLINE void Int4Codes(DF d, const std::uint8_t* p, VF& lo, VF& hi) {
  const hn::Rebind<std::uint32_t, DF> du;
  const hn::Rebind<std::int32_t, DF> di;
  const hn::Rebind<std::uint8_t, DF> du8;
  const auto b = hn::PromoteTo(du, hn::LoadU(du8, p));
  lo = hn::ConvertTo(d, hn::BitCast(di, hn::And(b, hn::Set(du, 15u))));
  hi = hn::ConvertTo(d, hn::BitCast(di, hn::ShiftRight<4>(b)));
}

// Per-channel tiles (4·K bytes) are one linear stream, which the hardware prefetchers lose at
// every 4 KiB page; requesting the lines 8 KiB ahead took N = K = 4096 from 12 to 16-18 GB/s on
// one thread (Zen 4, avx2 and AVX-512 alike). Grouped tiles do without: there it cost 12 -> 9-10.
constexpr std::int64_t kCacheLine = 64;
constexpr std::int64_t kAheadBytes = 8192;

// The group's partial dot products are kept per row and scaled once at the group's end; for
// int4 the zero point is taken off as s·z·Σx (the lanes of x summed over the group), so the
// per-element work is the widening and one multiply-add.
template <int kBits, bool kZeros>
void DotsM1(const float* HWY_RESTRICT x, const std::uint8_t* HWY_RESTRICT p, std::int64_t tiles,
            const QuantizedBlocks& q, float* HWY_RESTRICT out) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t t = 0; t < tiles; ++t) {
    VF acc[kTile];
    for (VF& a : acc) a = hn::Zero(d);
    for (std::int64_t g = 0; g < q.groups; ++g) {
      const std::uint8_t* block = p + (t * q.groups + g) * q.block_bytes;
      const BlockMeta meta = MetaOf<kBits, kZeros>(block);
      const std::uint8_t* codes = block + q.meta_bytes;
      const float* xg = x + g * q.group;
      VF part[kTile];
      for (VF& s : part) s = hn::Zero(d);
      if constexpr (kBits == 8) {
        // Run by run: the tile's bytes in order (a run of each row, then the next runs).
        for (std::int64_t j = 0; j < q.group; j += q.run_bytes) {
          const std::uint8_t* run = codes + j * kTile;
          if (q.groups == 1) {
            for (std::int64_t b = 0; b < q.run_bytes * kTile; b += kCacheLine) {
              __builtin_prefetch(run + kAheadBytes + b, 0, 2);  // never faults past the end
            }
          }
          for (std::int64_t c = 0; c < q.run_bytes; c += lanes) {
            const VF xv = hn::LoadU(d, xg + j + c);
            for (int r = 0; r < kTile; ++r) {
              part[r] = hn::MulAdd(Int8Codes(d, run + r * q.run_bytes + c), xv, part[r]);
            }
          }
        }
        for (int r = 0; r < kTile; ++r)
          acc[r] = hn::MulAdd(part[r], hn::Set(d, meta.scale[r]), acc[r]);
      } else {
        const std::int64_t half = q.group / 2;
        VF xsum = hn::Zero(d);
        for (std::int64_t c = 0; c < half; c += lanes) {
          const VF xlo = hn::LoadU(d, xg + c), xhi = hn::LoadU(d, xg + half + c);
          xsum = hn::Add(xsum, hn::Add(xlo, xhi));
          for (int r = 0; r < kTile; ++r) {
            VF lo, hi;
            Int4Codes(d, codes + r * q.run_bytes + c, lo, hi);  // an int4 row: one run
            part[r] = hn::MulAdd(hi, xhi, hn::MulAdd(lo, xlo, part[r]));
          }
        }
        for (int r = 0; r < kTile; ++r) {
          const VF s = hn::Set(d, meta.scale[r]);
          acc[r] = hn::MulAdd(part[r], s, acc[r]);
          acc[r] = hn::NegMulAdd(hn::Mul(s, hn::Set(d, meta.zero[r])), xsum, acc[r]);
        }
      }
    }
    for (int r = 0; r < kTile; ++r) out[t * kTile + r] = hn::GetLane(hn::SumOfLanes(d, acc[r]));
  }
}

// The block scales are powers of two, so v = x / s is exact wherever x's bits fit 15; blocks whose
// largest |x| is below 2^-100 would need a reciprocal past float's range and are refused too.
bool FixedPointX(const float* HWY_RESTRICT x, std::int64_t k, std::int64_t block,
                 std::int16_t* HWY_RESTRICT v, float* HWY_RESTRICT scales,
                 float* HWY_RESTRICT sums) {
  const DF d;
  const hn::Rebind<std::int32_t, DF> di;
  const hn::Rebind<std::int16_t, DF> d16;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t b0 = 0; b0 < k; b0 += block) {
    const std::int64_t b1 = std::min(k, b0 + block);
    // |x|'s bits order as its values, with infinities and NaNs above every finite value.
    auto bits = hn::Zero(di);
    for (std::int64_t c = b0; c < b1; c += lanes) {
      bits = hn::Max(bits, hn::BitCast(di, hn::Abs(hn::LoadU(d, x + c))));
    }
    const std::int32_t largest_bits = hn::GetLane(hn::MaxOfLanes(di, bits));
    if (largest_bits >= 0x7f800000) return false;  // an infinity or a NaN
    float largest = 0.0f;
    std::memcpy(&largest, &largest_bits, sizeof(largest));
    int e = 0;
    if (largest != 0.0f) {
      e = std::ilogb(largest);  // largest in [2^e, 2^(e+1)): times 2^(14 - e) below 2^15
      if (e < -100) return false;
    }
    const float scale = std::ldexp(1.0f, e - 14);
    scales[b0 / block] = scale;
    const VF inverse = hn::Set(d, std::ldexp(1.0f, 14 - e));
    auto sum = hn::Zero(di);  // at most 2^15 per element: exact in int32 and, below 2^24, float
    for (std::int64_t c = b0; c < b1; c += lanes) {
      const auto q = hn::NearestInt(hn::Mul(hn::LoadU(d, x + c), inverse));
      sum = hn::Add(sum, q);
      hn::StoreU(hn::DemoteTo(d16, q), d16, v + c);
    }
    if (sums != nullptr) {
      sums[b0 / block] = scale * static_cast<float>(hn::GetLane(hn::SumOfLanes(di, sum)));
    }
  }
  return true;
}

// Sums of 16-bit products in int32 lanes: per x block of 256 they stay below 2^31 on every
// target (256·128·2^15 = 2^30), and each block's sums turn float once, times its scale.
template <bool kPerChannel>
void Int8FixedDotsM1(const std::int16_t* HWY_RESTRICT x, const float* HWY_RESTRICT x_scales,
                     std::int64_t x_block, const std::uint8_t* HWY_RESTRICT p, std::int64_t tiles,
                     const QuantizedBlocks& q, float* HWY_RESTRICT out) {
  const hn::ScalableTag<std::int16_t> d16;
  const hn::Rebind<std::int8_t, decltype(d16)> d8;
  const hn::Repartition<std::int32_t, decltype(d16)> d32;
  const hn::Repartition<float, decltype(d16)> df;
  using V32 = hn::Vec<decltype(d32)>;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d16));
  for (std::int64_t t = 0; t < tiles; ++t) {
    hn::Vec<decltype(df)> acc[kTile];
    for (auto& a : acc) a = hn::Zero(df);
    for (std::int64_t g = 0; g < q.groups; ++g) {
      const std::uint8_t* block = p + (t * q.groups + g) * q.block_bytes;
      const BlockMeta meta = MetaOf<8, false>(block);
      const std::uint8_t* codes = block + q.meta_bytes;
      for (std::int64_t b0 = 0; b0 < q.group; b0 += x_block) {
        V32 even[kTile], odd[kTile];  // odd: the second sum of targets that reorder
        for (int r = 0; r < kTile; ++r) even[r] = odd[r] = hn::Zero(d32);
        const std::int64_t b1 = std::min(q.group, b0 + x_block);
        for (std::int64_t j = b0; j < b1; j += q.run_bytes) {
          const std::uint8_t* run = codes + j * kTile;
          if constexpr (kPerChannel) {
            for (std::int64_t b = 0; b < q.run_bytes * kTile; b += kCacheLine) {
              __builtin_prefetch(run + kAheadBytes + b, 0, 2);  // never faults past the end
            }
          }
          for (std::int64_t c = 0; c < q.run_bytes; c += lanes) {
            const auto xv = hn::LoadU(d16, x + g * q.group + j + c);
            for (int r = 0; r < kTile; ++r) {
              const auto w = hn::PromoteTo(
                  d16,
                  hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(run + r * q.run_bytes + c)));
              even[r] = hn::ReorderWidenMulAccumulate(d32, w, xv, even[r], odd[r]);
            }
          }
        }
        const float s = x_scales[(g * q.group + b0) / x_block];
        for (int r = 0; r < kTile; ++r) {
          const float scale = kPerChannel ? s : s * meta.scale[r];
          acc[r] =
              hn::MulAdd(hn::ConvertTo(df, hn::Add(even[r], odd[r])), hn::Set(df, scale), acc[r]);
        }
      }
    }
    for (int r = 0; r < kTile; ++r) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[r]));
      if constexpr (kPerChannel) sum *= MetaOf<8, false>(p + t * q.block_bytes).scale[r];
      out[t * kTile + r] = sum;
    }
  }
}

void Int8FixedPointDotsM1(const std::int16_t* x, const float* x_scales, std::int64_t x_block,
                          const std::uint8_t* p, std::int64_t tiles, const QuantizedBlocks& q,
                          float* out) {
  if (q.groups == 1) return Int8FixedDotsM1<true>(x, x_scales, x_block, p, tiles, q, out);
  Int8FixedDotsM1<false>(x, x_scales, x_block, p, tiles, q, out);
}

// int4 codes against x in fixed point, a group per x block: each row's 16-bit products summed in
// int32 lanes (below 128·15·2^15 < 2^26 per group), turned float once per group, times both
// scales; the zero point comes off as s·z·Σx with Σx the group's sum of x as rounded (x_sums).
// D16: vectors of half a group's codes over kSteps (16 bytes at groups of 32 on AVX-512); a fixed
// count where it is small, so that a group is straight-line code (kSteps = 0: half / lanes).
template <bool kZeros, int kSteps, class D16>
void Int4FixedDots(D16 d16, const std::int16_t* HWY_RESTRICT x, const float* HWY_RESTRICT x_scales,
                   const float* HWY_RESTRICT x_sums, const std::uint8_t* HWY_RESTRICT p,
                   std::int64_t tiles, const QuantizedBlocks& q, float* HWY_RESTRICT out) {
  const hn::Rebind<std::uint8_t, D16> d8;
  const hn::Repartition<std::int32_t, D16> d32;
  const hn::Repartition<float, D16> df;
  const hn::Rebind<std::uint16_t, D16> du16;
  using V32 = hn::Vec<decltype(d32)>;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d16));
  const std::int64_t half = q.group / 2;
  const auto low_nibble = hn::Set(du16, 15);
  for (std::int64_t t = 0; t < tiles; ++t) {
    hn::Vec<decltype(df)> acc[kTile];
    for (auto& a : acc) a = hn::Zero(df);
    float zero_terms[kTile] = {};
    for (std::int64_t g = 0; g < q.groups; ++g) {
      const std::uint8_t* block = p + (t * q.groups + g) * q.block_bytes;
      const BlockMeta meta = MetaOf<4, kZeros>(block);
      const std::uint8_t* codes = block + q.meta_bytes;
      const std::int16_t* xg = x + g * q.group;
      V32 even[kTile], odd[kTile];  // odd: the second sum of targets that reorder
      for (int r = 0; r < kTile; ++r) even[r] = odd[r] = hn::Zero(d32);
      const std::int64_t steps = kSteps > 0 ? kSteps : half / lanes;
      for (std::int64_t step = 0; step < steps; ++step) {
        const std::int64_t c = step * lanes;
        const auto xlo = hn::LoadU(d16, xg + c), xhi = hn::LoadU(d16, xg + half + c);
        for (int r = 0; r < kTile; ++r) {  // an int4 row: one run
          const auto b = hn::PromoteTo(du16, hn::LoadU(d8, codes + r * q.run_bytes + c));
          const auto lo = hn::BitCast(d16, hn::And(b, low_nibble));
          const auto hi = hn::BitCast(d16, hn::ShiftRight<4>(b));
          even[r] = hn::ReorderWidenMulAccumulate(d32, lo, xlo, even[r], odd[r]);
          even[r] = hn::ReorderWidenMulAccumulate(d32, hi, xhi, even[r], odd[r]);
        }
      }
      const float s = x_scales[g];
      for (int r = 0; r < kTile; ++r) {
        acc[r] = hn::MulAdd(hn::ConvertTo(df, hn::Add(even[r], odd[r])),
                            hn::Set(df, s * meta.scale[r]), acc[r]);
        zero_terms[r] += meta.scale[r] * meta.zero[r] * x_sums[g];
      }
    }
    for (int r = 0; r < kTile; ++r) {
      out[t * kTile + r] = hn::GetLane(hn::SumOfLanes(df, acc[r])) - zero_terms[r];
    }
  }
}

template <bool kZeros, class D16>
void Int4FixedDotsOf(D16 d16, const std::int16_t* x, const float* x_scales, const float* x_sums,
                     const std::uint8_t* p, std::int64_t tiles, const QuantizedBlocks& q,
                     float* out) {
  switch (q.group / 2 / static_cast<std::int64_t>(hn::Lanes(d16))) {
    case 1:
      return Int4FixedDots<kZeros, 1>(d16, x, x_scales, x_sums, p, tiles, q, out);
    case 2:
      return Int4FixedDots<kZeros, 2>(d16, x, x_scales, x_sums, p, tiles, q, out);
    case 4:
      return Int4FixedDots<kZeros, 4>(d16, x, x_scales, x_sums, p, tiles, q, out);
    default:
      return Int4FixedDots<kZeros, 0>(d16, x, x_scales, x_sums, p, tiles, q, out);
  }
}

void Int4FixedPointDotsM1(const std::int16_t* x, const float* x_scales, const float* x_sums,
                          const std::uint8_t* p, std::int64_t tiles, const QuantizedBlocks& q,
                          float* out) {
  const hn::ScalableTag<std::int16_t> full;
  if ((q.group / 2) % static_cast<std::int64_t>(hn::Lanes(full)) == 0) {
    if (q.zeros) return Int4FixedDotsOf<true>(full, x, x_scales, x_sums, p, tiles, q, out);
    return Int4FixedDotsOf<false>(full, x, x_scales, x_sums, p, tiles, q, out);
  }
  const hn::CappedTag<std::int16_t, 16> capped;  // groups of 32 on AVX-512
  if (q.zeros) return Int4FixedDotsOf<true>(capped, x, x_scales, x_sums, p, tiles, q, out);
  Int4FixedDotsOf<false>(capped, x, x_scales, x_sums, p, tiles, q, out);
}

// Dequantize's output: element (row, k − k0) at base[row·ld + k − k0].
struct PanelOut {
  float* base;
  std::int64_t ld;
  float* at(std::int64_t row, std::int64_t k) const { return base + row * ld + k; }
};

template <int kBits, bool kZeros>
void Dequantize(const std::uint8_t* HWY_RESTRICT p, std::int64_t tiles, const QuantizedBlocks& q,
                std::int64_t k0, std::int64_t k1, bool scaled, const PanelOut& out) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t g = k0 / q.group; g * q.group < k1; ++g) {
      const std::uint8_t* block = p + (t * q.groups + g) * q.block_bytes;
      const BlockMeta meta = MetaOf<kBits, kZeros>(block);
      // This group's part of [k0, k1): all of it for int4 (the caller's range is whole groups).
      const std::int64_t c0 = std::max(k0, g * q.group) - g * q.group;
      const std::int64_t c1 = std::min(k1, (g + 1) * q.group) - g * q.group;
      const std::int64_t k = g * q.group - k0;  // of the group's first element
      const std::uint8_t* codes = block + q.meta_bytes;
      if constexpr (kBits == 8) {
        // Run by run, a vector of each of the 4 rows per step: the block's bytes in order.
        VF scale[kTile];
        for (int r = 0; r < kTile; ++r) scale[r] = hn::Set(d, meta.scale[r]);
        for (std::int64_t j = c0 / q.run_bytes * q.run_bytes; j < c1; j += q.run_bytes) {
          const std::int64_t c_end = std::min(c1, j + q.run_bytes);
          const std::uint8_t* run = codes + j * kTile - j;  // row r's code c: run + r·run_bytes + c
          for (std::int64_t c = std::max(c0, j); c < c_end; c += lanes) {
            for (int r = 0; r < kTile; ++r) {
              const VF v = Int8Codes(d, run + r * q.run_bytes + c);
              hn::StoreU(scaled ? hn::Mul(v, scale[r]) : v, d, out.at(t * kTile + r, k + c));
            }
          }
        }
      } else {
        const std::int64_t half = q.group / 2;
        for (int r = 0; r < kTile; ++r) {
          const std::int64_t row = t * kTile + r;
          const VF s = hn::Set(d, scaled ? meta.scale[r] : 1.0f);
          const VF z = hn::Set(d, meta.zero[r]);
          for (std::int64_t c = 0; c < half; c += lanes) {
            VF lo, hi;
            Int4Codes(d, codes + r * q.run_bytes + c, lo, hi);  // an int4 row: one run
            hn::StoreU(hn::Mul(hn::Sub(lo, z), s), d, out.at(row, k + c));
            hn::StoreU(hn::Mul(hn::Sub(hi, z), s), d, out.at(row, k + half + c));
          }
        }
      }
    }
  }
}

void QuantizedDotsM1(const float* x, const std::uint8_t* p, std::int64_t tiles,
                     const QuantizedBlocks& q, float* out) {
  if (q.bits == 8) return DotsM1<8, false>(x, p, tiles, q, out);
  if (q.zeros) return DotsM1<4, true>(x, p, tiles, q, out);
  return DotsM1<4, false>(x, p, tiles, q, out);
}

void DequantizeTiles(const std::uint8_t* p, std::int64_t tiles, const QuantizedBlocks& q,
                     std::int64_t k0, std::int64_t k1, bool scaled, float* out, std::int64_t ld) {
  const PanelOut panel{out, ld};
  if (q.bits == 8) return Dequantize<8, false>(p, tiles, q, k0, k1, scaled, panel);
  if (q.zeros) return Dequantize<4, true>(p, tiles, q, k0, k1, scaled, panel);
  return Dequantize<4, false>(p, tiles, q, k0, k1, scaled, panel);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(QuantizedDotsM1);
HWY_EXPORT(FixedPointX);
HWY_EXPORT(Int8FixedPointDotsM1);
HWY_EXPORT(Int4FixedPointDotsM1);
HWY_EXPORT(DequantizeTiles);

void quantized_dots_m1(const float* x, const std::uint8_t* tiles_start, std::int64_t tiles,
                       const QuantizedBlocks& q, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(QuantizedDotsM1)(x, tiles_start, tiles, q, out);
}

std::int64_t quantized_fixed_x_block(const QuantizedBlocks& q) {
  return q.groups == 1 ? std::min<std::int64_t>(kFixedXBlock, q.group) : q.group;
}

bool quantized_fixed_x(const float* x, const QuantizedBlocks& q, std::int16_t* v, float* scales,
                       float* sums) {
  return TILEOPS_DYNAMIC_DISPATCH(FixedPointX)(x, q.group * q.groups, quantized_fixed_x_block(q), v,
                                               scales, sums);
}

void quantized_int8_fixed_dots_m1(const std::int16_t* x, const float* x_scales,
                                  const std::uint8_t* tiles_start, std::int64_t tiles,
                                  const QuantizedBlocks& q, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(Int8FixedPointDotsM1)
  (x, x_scales, quantized_fixed_x_block(q), tiles_start, tiles, q, out);
}

void quantized_int4_fixed_dots_m1(const std::int16_t* x, const float* x_scales, const float* x_sums,
                                  const std::uint8_t* tiles_start, std::int64_t tiles,
                                  const QuantizedBlocks& q, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(Int4FixedPointDotsM1)(x, x_scales, x_sums, tiles_start, tiles, q, out);
}

void dequantize_tiles(const std::uint8_t* tiles_start, std::int64_t tiles, const QuantizedBlocks& q,
                      std::int64_t k0, std::int64_t k1, bool scaled, float* out, std::int64_t ld) {
  TILEOPS_DYNAMIC_DISPATCH(DequantizeTiles)(tiles_start, tiles, q, k0, k1, scaled, out, ld);
}

}  // namespace tileops::ops::cpu
#endif
