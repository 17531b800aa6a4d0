#include "src/ops/cpu/simd/dpbf16_int4_kernels.h"

#include "src/ops/cpu/simd/dpbf16_intrinsics.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"

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
  if (q.group == 32) {  // a unit holds two groups: 16 bytes of each
    for (std::int64_t g = 0; g < q.groups; g += 2) {
      std::uint16_t* u = units + g / 2 * kUnit;
      const bool second = g + 1 < q.groups;
      for (std::int64_t j = 0; j < 16; ++j) {
        u[j] = x[g * 32 + j];
        u[32 + j] = x[g * 32 + 16 + j];
        u[16 + j] = second ? x[(g + 1) * 32 + j] : 0;
        u[48 + j] = second ? x[(g + 1) * 32 + 16 + j] : 0;
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

// 32 bytes of codes as two vectors of bfloat16 128 + q: the low nibbles and the high ones.
TILEOPS_DPBF16_TARGET inline void codes_as_bf16(__m256i bytes, __m512bh& lo, __m512bh& hi) {
  const __m512i words = _mm512_cvtepu8_epi16(bytes);
  const __m512i offset = _mm512_set1_epi16(0x4300);
  // (words & 0x000f) | 0x4300 in one ternary logic instruction (table 0xea: (a & b) | c).
  lo = reinterpret_cast<__m512bh>(
      _mm512_ternarylogic_epi32(words, _mm512_set1_epi16(0x000f), offset, 0xea));
  hi = reinterpret_cast<__m512bh>(_mm512_or_si512(_mm512_srli_epi16(words, 4), offset));
}

// The block's 4 scales, and 128 + its 4 zero points (z = 8 when none are stored).
TILEOPS_DPBF16_TARGET inline void meta_of(const std::uint8_t* block, const QuantizedBlocks& q,
                                          __m128& scale, __m128& offset) {
  scale = _mm_loadu_ps(reinterpret_cast<const float*>(block));
  offset = q.zeros ? _mm_add_ps(_mm_loadu_ps(reinterpret_cast<const float*>(block) + kTile),
                                _mm_set1_ps(128.0f))
                   : _mm_set1_ps(136.0f);
}

// Groups of 32: a unit is groups g and g + 1 of a row, their lanes scaled by a vector holding
// each group's scale in its 8 lanes.
TILEOPS_DPBF16_TARGET void tile_group32(const float* prepared, const std::uint8_t* tile,
                                        const QuantizedBlocks& q, float* out) {
  const auto* units = reinterpret_cast<const std::uint16_t*>(prepared);
  const float* sums = prepared + units_of(q) * kUnit / 2;
  __m512 acc[kTile];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m128 correction = _mm_setzero_ps();
  for (std::int64_t g = 0; g < q.groups; g += 2) {
    const std::uint8_t* b0 = tile + g * q.block_bytes;
    const bool second = g + 1 < q.groups;
    const std::uint8_t* b1 = second ? b0 + q.block_bytes : b0;
    __m128 s0, o0, s1, o1;
    meta_of(b0, q, s0, o0);
    meta_of(b1, q, s1, o1);
    if (!second) s1 = o1 = _mm_setzero_ps();
    correction = _mm_fmadd_ps(_mm_mul_ps(s0, o0), _mm_set1_ps(sums[g]), correction);
    if (second) correction = _mm_fmadd_ps(_mm_mul_ps(s1, o1), _mm_set1_ps(sums[g + 1]), correction);
    const __m512 scales = _mm512_insertf32x4(_mm512_castps128_ps512(s0), s1, 1);
    const std::uint16_t* u = units + g / 2 * kUnit;
    const auto xlo = reinterpret_cast<__m512bh>(_mm512_loadu_si512(u));
    const auto xhi = reinterpret_cast<__m512bh>(_mm512_loadu_si512(u + 32));
    for (int r = 0; r < kTile; ++r) {
      const __m128i c0 =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + q.meta_bytes + r * q.run_bytes));
      const __m128i c1 = second ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                                      b1 + q.meta_bytes + r * q.run_bytes))
                                : _mm_setzero_si128();
      __m512bh lo, hi;
      codes_as_bf16(_mm256_inserti128_si256(_mm256_castsi128_si256(c0), c1, 1), lo, hi);
      const __m512 part = _mm512_dpbf16_ps(_mm512_dpbf16_ps(_mm512_setzero_ps(), lo, xlo), hi, xhi);
      // Lanes 0-7 take row r's scale of group g (scales lane r), lanes 8-15 of g + 1 (lane 4 + r).
      const __m512i pick = _mm512_set_epi32(4 + r, 4 + r, 4 + r, 4 + r, 4 + r, 4 + r, 4 + r, 4 + r,
                                            r, r, r, r, r, r, r, r);
      acc[r] = _mm512_fmadd_ps(part, _mm512_permutexvar_ps(pick, scales), acc[r]);
    }
  }
  float corr[kTile];
  _mm_storeu_ps(corr, correction);
  for (int r = 0; r < kTile; ++r) out[r] = dpbf16_sum_lanes(acc[r]) - corr[r];
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
  for (std::int64_t t = 0; t < tiles; ++t) {
    if (q.group == 32) {
      tile_group32(prepared, tiles_start + t * tile_bytes, q, out + t * kTile);
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
