#include "src/ops/cpu/simd/dpbf16_dequantize.h"

#include <algorithm>
#include <cstring>

#include "src/ops/cpu/simd/dpbf16_intrinsics.h"
#include "tileops/core/error.h"

namespace tileops::ops::cpu {
namespace {

constexpr int kTile = 4;  // kQuantizedTileRows

// Where element (row, k − k0) goes: rows ld apart.
struct Panel {
  std::uint16_t* base;
  std::int64_t ld;
  std::uint16_t* at(std::int64_t row, std::int64_t k) const { return base + row * ld + k; }
};

#if TILEOPS_DPBF16_CODE
TILEOPS_DPBF16_WARNINGS_OFF
// lo then hi, 32 values in one rounding instruction and one store.
TILEOPS_DPBF16_TARGET inline void store32(__m512 lo, __m512 hi, std::uint16_t* p) {
  _mm512_storeu_si512(p, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
}

// 16 signed codes as float32.
TILEOPS_DPBF16_TARGET inline __m512 codes8(const std::uint8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// int4, whole groups (k0, k1 multiples of the group). Per row and group, its 16 values
// s·(q − z) are rounded to bfloat16 once, twice over in a 32-entry table, which VPERMW indexes by
// the code: by the whole byte for the low nibble (the table repeats past 15). A row of a block is
// one run, byte i holding codes i and i + group / 2; in groups of 32 (16 bytes a row, the 4 rows'
// one after the other) one load of codes serves two rows. Everything the loops read is a local
// (the vector stores may alias any memory).
TILEOPS_DPBF16_TARGET void dequantize_int4(const std::uint8_t* p, std::int64_t tiles,
                                           const QuantizedBlocks& q, std::int64_t k0,
                                           std::int64_t k1, bool scaled, const Panel& out) {
  const std::int64_t groups = q.groups, block_bytes = q.block_bytes, meta = q.meta_bytes;
  const std::int64_t group = q.group, half = group / 2;
  const bool zeros = q.zeros;
  std::uint16_t* const base = out.base;
  const std::int64_t ld = out.ld;
  const __m512 all_codes = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 minus_8 = _mm512_sub_ps(all_codes, _mm512_set1_ps(8.0f));  // no zero points
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::uint8_t* block = p + (t * groups + k0 / group) * block_bytes;
    std::uint16_t* rows = base + t * kTile * ld;
    for (std::int64_t k = 0; k < k1 - k0; k += group, block += block_bytes) {
      __m512i table[kTile];
      for (int r = 0; r < kTile; ++r) {
        float s = 1.0f, z;
        if (scaled) std::memcpy(&s, block + r * sizeof(float), sizeof(float));
        __m512 codes = minus_8;
        if (zeros) {
          std::memcpy(&z, block + (kTile + r) * sizeof(float), sizeof(float));
          codes = _mm512_sub_ps(all_codes, _mm512_set1_ps(z));
        }
        const __m512 v = _mm512_mul_ps(codes, _mm512_set1_ps(s));
        table[r] = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(v, v));
      }
      if (half == 16) {  // row r: the low nibbles of its 16 bytes, then their high nibbles
        for (int r = 0; r < kTile; r += 2) {
          const __m512i bytes = _mm512_cvtepu8_epi16(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + meta + r * 16)));
          const __m512i high = _mm512_srli_epi16(bytes, 4);
          _mm512_storeu_si512(
              rows + r * ld + k,
              _mm512_permutexvar_epi16(_mm512_shuffle_i64x2(bytes, high, 0x44), table[r]));
          _mm512_storeu_si512(
              rows + (r + 1) * ld + k,
              _mm512_permutexvar_epi16(_mm512_shuffle_i64x2(bytes, high, 0xee), table[r + 1]));
        }
        continue;
      }
      for (int r = 0; r < kTile; ++r) {
        for (std::int64_t c = 0; c < half; c += 32) {  // half is 32 or 64
          const __m512i bytes = _mm512_cvtepu8_epi16(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + meta + r * half + c)));
          _mm512_storeu_si512(rows + r * ld + k + c, _mm512_permutexvar_epi16(bytes, table[r]));
          _mm512_storeu_si512(rows + r * ld + k + half + c,
                              _mm512_permutexvar_epi16(_mm512_srli_epi16(bytes, 4), table[r]));
        }
      }
    }
  }
}

TILEOPS_DPBF16_TARGET void dequantize(const std::uint8_t* p, std::int64_t tiles,
                                      const QuantizedBlocks& q, std::int64_t k0, std::int64_t k1,
                                      bool scaled, const Panel& out) {
  if (q.bits == 4) return dequantize_int4(p, tiles, q, k0, k1, scaled, out);
  for (std::int64_t t = 0; t < tiles; ++t) {  // int8: s·q
    for (std::int64_t g = k0 / q.group; g * q.group < k1; ++g) {
      const std::uint8_t* block = p + (t * q.groups + g) * q.block_bytes;
      float scale[kTile];
      std::memcpy(scale, block, sizeof(scale));
      const std::uint8_t* codes = block + q.meta_bytes;
      const std::int64_t c0 = std::max(k0, g * q.group) - g * q.group;
      const std::int64_t c1 = std::min(k1, (g + 1) * q.group) - g * q.group;
      const std::int64_t k = g * q.group - k0;
      // Runs of 32 or 64 codes, the 4 rows' in turn; c0, c1 multiples of 32.
      for (std::int64_t j = c0 / q.run_bytes * q.run_bytes; j < c1; j += q.run_bytes) {
        const std::int64_t c_end = std::min(c1, j + q.run_bytes);
        for (int r = 0; r < kTile; ++r) {
          const std::uint8_t* run = codes + j * kTile + r * q.run_bytes - j;  // code c: run + c
          const __m512 s = _mm512_set1_ps(scale[r]);
          for (std::int64_t c = std::max(c0, j); c < c_end; c += 32) {  // runs of 32 or 64
            __m512 lo = codes8(run + c), hi = codes8(run + c + 16);
            if (scaled) lo = _mm512_mul_ps(lo, s), hi = _mm512_mul_ps(hi, s);
            store32(lo, hi, out.at(t * kTile + r, k + c));
          }
        }
      }
    }
  }
}
TILEOPS_DPBF16_WARNINGS_ON
#else
void dequantize(const std::uint8_t*, std::int64_t, const QuantizedBlocks&, std::int64_t,
                std::int64_t, bool, const Panel&) {
  throw_internal_error("linear_quantized", "VDPBF16PS dequantization called without AVX512-BF16");
}
#endif

}  // namespace

void dpbf16_dequantize_tiles(const std::uint8_t* tiles_start, std::int64_t tiles,
                             const QuantizedBlocks& q, std::int64_t k0, std::int64_t k1,
                             bool scaled, std::uint16_t* out, std::int64_t ld) {
  dequantize(tiles_start, tiles, q, k0, k1, scaled, Panel{out, ld});
}

}  // namespace tileops::ops::cpu
