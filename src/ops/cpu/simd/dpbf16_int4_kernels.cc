#include "src/ops/cpu/simd/dpbf16_int4_kernels.h"

#include "src/ops/cpu/simd/dpbf16_intrinsics.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::int64_t kUnit = 64;  // codes of a row per pair of VDPBF16PS
constexpr int kTile = 4;            // kQuantizedTileRows

std::int64_t units_of(const QuantizedBlocks& q) { return (q.group * q.groups + kUnit - 1) / kUnit; }

}  // namespace

std::int64_t dpbf16_int4_x_floats(const QuantizedBlocks& q) {
  return units_of(q) * kUnit / 2 + q.groups;
}

void dpbf16_int4_prepare_x(const std::uint16_t* x, const QuantizedBlocks& q, float* prepared) {
  auto* units = reinterpret_cast<std::uint16_t*>(prepared);
  const std::int64_t half = q.group / 2;
  if (q.group == 32) {
    // Per group 4 planes of 8 elements, plane j for nibble j of the codes' 16-bit words: byte b
    // of a row's 16 holds w[b] (low nibble) and w[16 + b], so word i's nibbles are w[2i],
    // w[16 + 2i], w[2i + 1], w[17 + 2i], and VDPBF16PS pairs words 2m and 2m + 1.
    for (std::int64_t g = 0; g < q.groups; ++g) {
      std::uint16_t* u = units + g * 32;
      const std::uint16_t* xg = x + g * 32;
      for (std::int64_t m = 0; m < 4; ++m) {
        for (std::int64_t e = 0; e < 2; ++e) {  // word 2m + e
          const std::int64_t i = 2 * m + e;
          u[2 * m + e] = xg[2 * i];
          u[8 + 2 * m + e] = xg[16 + 2 * i];
          u[16 + 2 * m + e] = xg[2 * i + 1];
          u[24 + 2 * m + e] = xg[17 + 2 * i];
        }
      }
    }
  } else {  // a group holds half / 32 units: 32 bytes each
    for (std::int64_t g = 0; g < q.groups; ++g) {
      for (std::int64_t c = 0; c < half; c += 32) {
        std::uint16_t* u = units + (g * (half / 32) + c / 32) * kUnit;
        for (std::int64_t j = 0; j < 32; ++j) {
          u[j] = x[g * q.group + c + j];
          u[32 + j] = x[g * q.group + half + c + j];
        }
      }
    }
  }
  float* sums = prepared + units_of(q) * kUnit / 2;
  for (std::int64_t g = 0; g < q.groups; ++g) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < q.group; ++j) s += bfloat16_to_float(x[g * q.group + j]);
    sums[g] = s;
  }
}

#if TILEOPS_DPBF16_CODE
TILEOPS_DPBF16_WARNINGS_OFF
namespace {

// The low nibble of each 16-bit word as the bfloat16 128 + q: (words & 0x000f) | 0x4300 (ternary
// logic table 0xea: (a & b) | c).
TILEOPS_DPBF16_TARGET inline __m512bh low_nibbles(__m512i words) {
  return reinterpret_cast<__m512bh>(
      _mm512_ternarylogic_epi32(words, _mm512_set1_epi16(0x000f), _mm512_set1_epi16(0x4300), 0xea));
}

// 32 bytes of codes as two vectors of bfloat16 128 + q: the low nibbles and the high ones.
TILEOPS_DPBF16_TARGET inline void codes_as_bf16(__m256i bytes, __m512bh& lo, __m512bh& hi) {
  const __m512i words = _mm512_cvtepu8_epi16(bytes);
  lo = low_nibbles(words);
  hi = reinterpret_cast<__m512bh>(
      _mm512_or_si512(_mm512_srli_epi16(words, 4), _mm512_set1_epi16(0x4300)));
}

// The block's 4 scales, and 128 + its 4 zero points (z = 8 when none are stored).
TILEOPS_DPBF16_TARGET inline void meta_of(const std::uint8_t* block, const QuantizedBlocks& q,
                                          __m128& scale, __m128& offset) {
  scale = _mm_loadu_ps(reinterpret_cast<const float*>(block));
  offset = q.zeros ? _mm_add_ps(_mm_loadu_ps(reinterpret_cast<const float*>(block) + kTile),
                                _mm_set1_ps(128.0f))
                   : _mm_set1_ps(136.0f);
}

// Groups of 32: a block's 64 bytes of codes (4 rows × 16) as one vector of 32 words, each
// nibble position a plane of bfloat16 weights (128 + q) in two integer instructions, no shuffle:
// VDPBF16PS lanes 4r..4r + 3 sum row r against the group's x plane repeated per row, and one
// permute per block spreads the rows' scales over their lanes. On Intel cores the next blocks
// are requested kFetchAhead bytes ahead: Emerald Rapids' prefetchers left this loop waiting on
// memory (decode 18 → 25 tokens/s with the request alone). Not on AMD's, where the same request
// in the float32 kernel's grouped tiles measured slower (Zen 4; quantized_kernels.cc) and this
// kernel ran without one.
constexpr std::int64_t kFetchAhead = 4096;

// A group's x plane (8 bfloat16) repeated in every 128-bit lane: one per row.
TILEOPS_DPBF16_TARGET inline __m512bh plane(const std::uint16_t* p) {
  return reinterpret_cast<__m512bh>(
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

TILEOPS_DPBF16_TARGET void tile_group32(const float* prepared, const std::uint8_t* tile,
                                        const QuantizedBlocks& q, bool fetch_ahead, float* out) {
  const auto* planes = reinterpret_cast<const std::uint16_t*>(prepared);
  const float* sums = prepared + units_of(q) * kUnit / 2;
  const __m512i offset = _mm512_set1_epi16(0x4300);
  const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m128 correction = _mm_setzero_ps();
  for (std::int64_t g = 0; g < q.groups; ++g) {
    const std::uint8_t* block = tile + g * q.block_bytes;
    if (fetch_ahead) {
      _mm_prefetch(reinterpret_cast<const char*>(block + kFetchAhead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(block + kFetchAhead + 64), _MM_HINT_T0);
    }
    __m128 scale, zero_offset;
    meta_of(block, q, scale, zero_offset);
    correction = _mm_fmadd_ps(_mm_mul_ps(scale, zero_offset), _mm_set1_ps(sums[g]), correction);
    const __m512i words = _mm512_loadu_si512(block + q.meta_bytes);
    const std::uint16_t* x = planes + g * 32;
    const __m512 low =
        _mm512_dpbf16_ps(_mm512_dpbf16_ps(_mm512_setzero_ps(), low_nibbles(words), plane(x)),
                         low_nibbles(_mm512_srli_epi16(words, 4)), plane(x + 8));
    const __m512 high = _mm512_dpbf16_ps(
        _mm512_dpbf16_ps(_mm512_setzero_ps(), low_nibbles(_mm512_srli_epi16(words, 8)),
                         plane(x + 16)),
        reinterpret_cast<__m512bh>(_mm512_or_si512(_mm512_srli_epi16(words, 12), offset)),
        plane(x + 24));
    const __m512 scales = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(scale));
    acc0 = _mm512_fmadd_ps(low, scales, acc0);
    acc1 = _mm512_fmadd_ps(high, scales, acc1);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(acc0, acc1));
  float corr[kTile];
  _mm_storeu_ps(corr, correction);
  for (int r = 0; r < kTile; ++r) {
    out[r] = (lanes[4 * r] + lanes[4 * r + 1]) + (lanes[4 * r + 2] + lanes[4 * r + 3]) - corr[r];
  }
}

// Groups of 64 or 128: a group is half / 32 units of a row, scaled once.
TILEOPS_DPBF16_TARGET void tile_groups(const float* prepared, const std::uint8_t* tile,
                                       const QuantizedBlocks& q, float* out) {
  const auto* units = reinterpret_cast<const std::uint16_t*>(prepared);
  const float* sums = prepared + units_of(q) * kUnit / 2;
  const std::int64_t half = q.group / 2;
  __m512 acc[kTile];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m128 correction = _mm_setzero_ps();
  for (std::int64_t g = 0; g < q.groups; ++g) {
    const std::uint8_t* block = tile + g * q.block_bytes;
    __m128 scale, offset;
    meta_of(block, q, scale, offset);
    correction = _mm_fmadd_ps(_mm_mul_ps(scale, offset), _mm_set1_ps(sums[g]), correction);
    float s[kTile];
    _mm_storeu_ps(s, scale);
    const std::uint16_t* u = units + g * (half / 32) * kUnit;
    for (int r = 0; r < kTile; ++r) {
      const std::uint8_t* codes = block + q.meta_bytes + r * q.run_bytes;  // an int4 row: one run
      __m512 part = _mm512_setzero_ps();
      for (std::int64_t c = 0; c < half; c += 32) {
        __m512bh lo, hi;
        codes_as_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + c)), lo, hi);
        const std::uint16_t* uc = u + c / 32 * kUnit;
        part = _mm512_dpbf16_ps(part, lo, reinterpret_cast<__m512bh>(_mm512_loadu_si512(uc)));
        part = _mm512_dpbf16_ps(part, hi, reinterpret_cast<__m512bh>(_mm512_loadu_si512(uc + 32)));
      }
      acc[r] = _mm512_fmadd_ps(part, _mm512_set1_ps(s[r]), acc[r]);
    }
  }
  float corr[kTile];
  _mm_storeu_ps(corr, correction);
  for (int r = 0; r < kTile; ++r) out[r] = dpbf16_sum_lanes(acc[r]) - corr[r];
}

}  // namespace

void dpbf16_int4_dots_m1(const float* prepared, const std::uint8_t* tiles_start, std::int64_t tiles,
                         const QuantizedBlocks& q, float* out) {
  if (q.bits != 4) throw_internal_error("dpbf16_int4_dots_m1", "int4 weights only");
  const std::int64_t tile_bytes = q.groups * q.block_bytes;
  static const bool fetch_ahead = cpu_vendor() == CpuVendor::kIntel;
  for (std::int64_t t = 0; t < tiles; ++t) {
    if (q.group == 32) {
      tile_group32(prepared, tiles_start + t * tile_bytes, q, fetch_ahead, out + t * kTile);
    } else {
      tile_groups(prepared, tiles_start + t * tile_bytes, q, out + t * kTile);
    }
  }
}

TILEOPS_DPBF16_WARNINGS_ON

#else  // no AVX512-BF16 code on this platform

void dpbf16_int4_dots_m1(const float*, const std::uint8_t*, std::int64_t, const QuantizedBlocks&,
                         float*) {
  throw Error(ErrorKind::kUnsupported, "dpbf16_int4_dots_m1: AVX512-BF16 is not available here");
}

#endif

}  // namespace tileops::ops::cpu
