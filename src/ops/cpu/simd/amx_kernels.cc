#include "src/ops/cpu/simd/amx_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/knobs.h"

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define TILEOPS_AMX_CODE 1
#include <immintrin.h>
#endif

namespace tileops::ops::cpu {

#if TILEOPS_AMX_CODE
namespace {

#define TILEOPS_AMX_TARGET __attribute__((target("amx-tile,amx-bf16")))

// The 64-byte tile configuration (palette 1): every tile 16 rows of 64 bytes.
struct TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// Where A's row tiles are: tile i's K step at p (a multiple of kAmxK) starts at
// data + i·next + p·k_scale and has rows `row_bytes` apart. Packed (amx_bf16_block): next =
// kc·kAmxRows, k_scale = kAmxRows, 64-byte rows; a weight read in place (amx_bf16_rows): next =
// kAmxRows·ld_w, k_scale = 1, rows ld_w·2 bytes apart.
struct ATiles {
  const std::uint16_t* data;
  std::int64_t next;
  std::int64_t k_scale;
  std::int64_t row_bytes;
};

// One 16- or 32-row × 16- or 32-column block of C in tiles 0-3 (rows +16 in 2-3, columns +16 in
// 1 and 3), A's row tiles in 4-5 and B's strips in 6-7: per K step 2-4 tile loads feed 1-4
// products. `b` is B's strip (b + kc·kAmxCols the next one), each K step 1 KiB of 64-byte rows.
template <bool kTwoRows, bool kTwoCols>
TILEOPS_AMX_TARGET void tile_block(const ATiles& a, const std::uint16_t* b, std::int64_t kc,
                                   float* c, std::int64_t ldc, bool accumulate) {
  constexpr std::int64_t kRowBytes = 64;
  const std::int64_t c_bytes = ldc * 4;
  const std::uint16_t* a0 = a.data;
  const std::uint16_t* a1 = a.data + a.next;
  const std::uint16_t* b1 = b + kc * kAmxCols;
  float* c1 = c + kAmxRows * ldc;
  if (accumulate) {
    _tile_loadd(0, c, c_bytes);
    if constexpr (kTwoCols) _tile_loadd(1, c + kAmxCols, c_bytes);
    if constexpr (kTwoRows) _tile_loadd(2, c1, c_bytes);
    if constexpr (kTwoRows && kTwoCols) _tile_loadd(3, c1 + kAmxCols, c_bytes);
  } else {
    _tile_zero(0);
    if constexpr (kTwoCols) _tile_zero(1);
    if constexpr (kTwoRows) _tile_zero(2);
    if constexpr (kTwoRows && kTwoCols) _tile_zero(3);
  }
  for (std::int64_t p = 0; p < kc; p += kAmxK) {
    _tile_loadd(4, a0 + p * a.k_scale, a.row_bytes);
    _tile_loadd(6, b + p * kAmxCols, kRowBytes);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (kTwoCols) {
      _tile_loadd(7, b1 + p * kAmxCols, kRowBytes);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (kTwoRows) {
      _tile_loadd(5, a1 + p * a.k_scale, a.row_bytes);
      _tile_dpbf16ps(2, 5, 6);
    }
    if constexpr (kTwoRows && kTwoCols) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, c_bytes);
  if constexpr (kTwoCols) _tile_stored(1, c + kAmxCols, c_bytes);
  if constexpr (kTwoRows) _tile_stored(2, c1, c_bytes);
  if constexpr (kTwoRows && kTwoCols) _tile_stored(3, c1 + kAmxCols, c_bytes);
}

// C (+)= A·B over `tiles` row tiles of A × `strips` strips of B in 2×2 blocks, B strip pairs
// outside (they stay in L1 or L2 while A's tiles pass).
TILEOPS_AMX_TARGET void tile_blocks(const ATiles& a, std::int64_t tiles, const std::uint16_t* b,
                                    std::int64_t strips, std::int64_t kc, float* c,
                                    std::int64_t ldc, bool accumulate) {
  for (std::int64_t t = 0; t < strips; t += 2) {
    const std::uint16_t* bt = b + t * kc * kAmxCols;
    const bool two_cols = t + 1 < strips;
    for (std::int64_t i = 0; i < tiles; i += 2) {
      const ATiles ai{a.data + i * a.next, a.next, a.k_scale, a.row_bytes};
      float* ci = c + i * kAmxRows * ldc + t * kAmxCols;
      const bool two_rows = i + 1 < tiles;
      if (two_rows && two_cols) {
        tile_block<true, true>(ai, bt, kc, ci, ldc, accumulate);
      } else if (two_rows) {
        tile_block<true, false>(ai, bt, kc, ci, ldc, accumulate);
      } else if (two_cols) {
        tile_block<false, true>(ai, bt, kc, ci, ldc, accumulate);
      } else {
        tile_block<false, false>(ai, bt, kc, ci, ldc, accumulate);
      }
    }
  }
}

// Every tile 16 rows of 64 bytes.
TILEOPS_AMX_TARGET void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kAmxRows;
    config.colsb[t] = 64;
  }
  // The tile loads are asm without a memory operand: keep the caller's stores (the packing)
  // before them. GCC's _tile_loadconfig tells the compiler it reads 8 bytes, which would let it
  // drop the stores of the rest of the configuration: name all 64.
  __asm__ volatile("" ::: "memory");
  __asm__ volatile("ldtilecfg %0" ::"m"(config));
}

}  // namespace

bool amx_bf16_enabled() {
  return cpu_amx_bf16() && simd_target_allows_avx512() && knob("TILEOPS_AMX") != "0";
}

// Pairs of B strips outside (2·kc·64 bytes, 32 KiB at kc = 256, stay in L1), pairs of A row
// tiles inside (the A block streams from L2, the accumulator tiles come from L2).
TILEOPS_AMX_TARGET void amx_bf16_block(const std::uint16_t* a, std::int64_t rows, std::int64_t kc,
                                       const std::uint16_t* b, std::int64_t n_strips, float* acc,
                                       std::int64_t ld_acc, bool accumulate) {
  configure_tiles();
  tile_blocks(ATiles{a, kc * kAmxRows, kAmxRows, 64}, rows / kAmxRows, b, n_strips, kc, acc, ld_acc,
              accumulate);
  _tile_release();  // back to the init state: a context switch need not save 8 KiB of tiles
}

// One strip of X (decode): one row tile of W at a time over the K block, so that 16 weight rows
// stream at once (four tiles, 64 rows, outran the hardware prefetchers)
// (bench/results/cpu-tuning.md). More strips: 2×2 blocks, each W tile pair (from memory once, then
// L2) against every X strip pair.
TILEOPS_AMX_TARGET void amx_bf16_rows(const std::uint16_t* w, std::int64_t ld_w, std::int64_t tiles,
                                      std::int64_t kc, const std::uint16_t* xt, std::int64_t strips,
                                      float* out, std::int64_t ld_out, bool accumulate) {
  const std::int64_t w_bytes = ld_w * 2;
  const std::int64_t w_tile = kAmxRows * ld_w;
  configure_tiles();
  if (strips > 1) {
    for (std::int64_t t = 0; t < tiles; t += 2) {
      tile_blocks(ATiles{w + t * w_tile, w_tile, 1, w_bytes}, std::min<std::int64_t>(2, tiles - t),
                  xt, strips, kc, out + t * kAmxRows * ld_out, ld_out, accumulate);
    }
    _tile_release();
    return;
  }
  constexpr std::int64_t kRowBytes = 64;
  const std::int64_t o_bytes = ld_out * 4;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::uint16_t* wt = w + t * w_tile;
    float* o = out + t * kAmxRows * ld_out;
    if (accumulate) {
      _tile_loadd(0, o, o_bytes);
    } else {
      _tile_zero(0);
    }
    for (std::int64_t p = 0; p < kc; p += kAmxK) {
      _tile_loadd(6, xt + p * kAmxCols, kRowBytes);
      _tile_loadd(4, wt + p, w_bytes);
      _tile_dpbf16ps(0, 4, 6);
    }
    _tile_stored(0, o, o_bytes);
  }
  _tile_release();
}

#else  // no AMX code on this platform

bool amx_bf16_enabled() { return false; }

void amx_bf16_block(const std::uint16_t*, std::int64_t, std::int64_t, const std::uint16_t*,
                    std::int64_t, float*, std::int64_t, bool) {
  throw Error(ErrorKind::kUnsupported, "amx_bf16_block: AMX is not available on this platform");
}

void amx_bf16_rows(const std::uint16_t*, std::int64_t, std::int64_t, std::int64_t,
                   const std::uint16_t*, std::int64_t, float*, std::int64_t, bool) {
  throw Error(ErrorKind::kUnsupported, "amx_bf16_rows: AMX is not available on this platform");
}

#endif

}  // namespace tileops::ops::cpu
