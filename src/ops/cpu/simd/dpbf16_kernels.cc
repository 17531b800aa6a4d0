#include "src/ops/cpu/simd/dpbf16_kernels.h"

#include <algorithm>
#include <cstring>

#include "src/ops/cpu/simd/dpbf16_intrinsics.h"
#include "tileops/core/error.h"
#include "tileops/runtime/cpu_info.h"

namespace tileops::ops::cpu {

#if TILEOPS_DPBF16_CODE
TILEOPS_DPBF16_WARNINGS_OFF
namespace {

constexpr std::int64_t kTileRows = 16;  // the packed layouts' row tiles and strips
constexpr std::int64_t kStepK = 32;     // K per packed step of a row tile

// The pair (p, p + 1) of bfloat16 at `pair` in every lane, for VDPBF16PS's left operand.
TILEOPS_DPBF16_TARGET inline __m512bh broadcast_pair(const std::uint16_t* pair) {
  std::int32_t bits;
  std::memcpy(&bits, pair, sizeof bits);
  return reinterpret_cast<__m512bh>(_mm512_set1_epi32(bits));
}

TILEOPS_DPBF16_TARGET inline __m512bh load_pairs(const std::uint16_t* p) {
  return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p));
}

// A register tile of kRows rows of one A row tile (from `a`, its row r0) × kStrips B strips of 16
// columns: per K pair, kStrips B loads and kRows broadcasts (folded into the instruction's
// memory operand) feed kRows·kStrips dot products. 8 × 3 keeps 24 of the 32 registers
// accumulating, as the float32 micro-kernel's 8 × 48.
template <int kRows, int kStrips>
TILEOPS_DPBF16_TARGET void dp_tile(const std::uint16_t* a, const std::uint16_t* b, std::int64_t kc,
                                   float* c, std::int64_t ldc, bool accumulate) {
  const std::int64_t strip = kc * kTileRows;  // elements from one B strip to the next
  // The accumulator tile was last touched a K block ago: fetch it into L2 while the products run.
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kStrips; ++v) __builtin_prefetch(c + r * ldc + v * 16, 1, 2);
  }
  __m512 acc[kRows][kStrips];
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kStrips; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (std::int64_t s = 0; s < kc; s += kStepK) {
    const std::uint16_t* as = a + s * kTileRows;  // this K step of the row tile
    const std::uint16_t* bs = b + s * kTileRows;  // its 16 pairs of B rows
#pragma GCC unroll 16
    for (int q = 0; q < kStepK / 2; ++q) {
      __m512bh bv[kStrips];
      for (int v = 0; v < kStrips; ++v) bv[v] = load_pairs(bs + v * strip + q * 32);
      for (int r = 0; r < kRows; ++r) {
        const __m512bh av = broadcast_pair(as + r * kStepK + 2 * q);
        for (int v = 0; v < kStrips; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kStrips; ++v) {
      float* out = c + r * ldc + v * 16;
      _mm512_storeu_ps(out,
                       accumulate ? _mm512_add_ps(acc[r][v], _mm512_loadu_ps(out)) : acc[r][v]);
    }
  }
}

// The next K block of a group's weight rows (`next`, nullptr for none), fetched while the passes
// of x rows (`pass` of `passes`) run over the current one: a line of each row every `passes`
// steps, so that the weights stream at an even rate instead of all during pass 0
// (bench/results/cpu-tuning.md).
struct NextBlock {
  const std::uint16_t* next;
  std::int64_t pass, passes;
};

// Weight rows × x rows of partial sums (16 lanes each) over K [k0, k1), k1 - k0 <= 32 past the
// last whole 32: the tail is read with a mask (zeros contribute nothing).
template <int kRows, int kCols>
TILEOPS_DPBF16_TARGET void dot_block(const std::uint16_t* x, std::int64_t ld_x,
                                     const std::uint16_t* w, std::int64_t ld_w, std::int64_t k0,
                                     std::int64_t k1, __m512* part, bool first,
                                     const NextBlock& pf) {
  __m512 acc[kCols][kRows];
  for (int i = 0; i < kCols; ++i) {
    for (int r = 0; r < kRows; ++r) acc[i][r] = first ? _mm512_setzero_ps() : part[i * kRows + r];
  }
  // This pass's share of the next block's lines (a K step is one line of each row).
  const std::uint16_t* fetch =
      pf.next == nullptr ? nullptr : pf.next + pf.pass * ((k1 - k0) / kStepK / pf.passes) * kStepK;
  std::int64_t tick = 0;
  std::int64_t p = k0;
  for (; p + kStepK <= k1; p += kStepK) {
    if (fetch != nullptr && ++tick == pf.passes) {
      tick = 0;
      for (int r = 0; r < kRows; ++r) __builtin_prefetch(fetch + r * ld_w, 0, 2);
      fetch += kStepK;
    }
    __m512bh wv[kRows];
    for (int r = 0; r < kRows; ++r) wv[r] = load_pairs(w + r * ld_w + p);
    for (int i = 0; i < kCols; ++i) {
      const __m512bh xv = load_pairs(x + i * ld_x + p);
      for (int r = 0; r < kRows; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], xv, wv[r]);
    }
  }
  if (p < k1) {
    const auto live = static_cast<__mmask32>((1u << (k1 - p)) - 1);  // k1 - p < 32
    __m512bh wv[kRows];
    for (int r = 0; r < kRows; ++r) {
      wv[r] = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(live, w + r * ld_w + p));
    }
    for (int i = 0; i < kCols; ++i) {
      const auto xv = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(live, x + i * ld_x + p));
      for (int r = 0; r < kRows; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], xv, wv[r]);
    }
  }
  for (int i = 0; i < kCols; ++i) {
    for (int r = 0; r < kRows; ++r) part[i * kRows + r] = acc[i][r];
  }
}

// K blocks: the group's 6 weight rows (24 KiB of a block) and 4 x rows (16 KiB) stay in L1 while
// the next 4 x rows come from L2 (bench/results/cpu-tuning.md).
constexpr std::int64_t kDotBlock = 2048;

// dot_block over the x rows [i, i + n) in blocks of up to kCols rows.
template <int kRows, int kCols>
TILEOPS_DPBF16_TARGET void dot_rows_of(const std::uint16_t* x, std::int64_t ld_x, std::int64_t n,
                                       const std::uint16_t* w, std::int64_t ld_w, std::int64_t k0,
                                       std::int64_t k1, __m512* part, NextBlock pf) {
  for (; n >= kCols; n -= kCols, x += kCols * ld_x, part += kCols * kRows, ++pf.pass) {
    dot_block<kRows, kCols>(x, ld_x, w, ld_w, k0, k1, part, k0 == 0, pf);
  }
  if constexpr (kCols > 1) {
    if (n > 0) dot_rows_of<kRows, kCols - 1>(x, ld_x, n, w, ld_w, k0, k1, part, pf);
  }
}

// out[i][r] for kRows weight rows and all m (<= 16) x rows.
template <int kRows, int kCols>
TILEOPS_DPBF16_TARGET void dot_group(const std::uint16_t* x, std::int64_t ld_x, std::int64_t m,
                                     const std::uint16_t* w, std::int64_t ld_w, std::int64_t k,
                                     float* out, std::int64_t ld_out) {
  __m512 part[16 * kRows];
  const std::int64_t passes = (m + kCols - 1) / kCols;
  for (std::int64_t k0 = 0; k0 < k; k0 += kDotBlock) {
    const std::int64_t k1 = std::min(k, k0 + kDotBlock);
    // One pass reads the weights once, as the hardware prefetcher expects; after the last
    // block, the next group's rows come next.
    const std::uint16_t* next = passes == 1 ? nullptr : k1 < k ? w + k1 : w + kRows * ld_w;
    dot_rows_of<kRows, kCols>(x, ld_x, m, w, ld_w, k0, k1, part, NextBlock{next, 0, passes});
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (int r = 0; r < kRows; ++r) {
      out[i * ld_out + r] = k == 0 ? 0.0f : dpbf16_sum_lanes(part[i * kRows + r]);
    }
  }
}

// How far ahead the packed kernels request their weight stream into L2 (as packed_block_f32).
constexpr std::int64_t kPackedFetchBytes = 8192;

// 16 accumulators: fewer chains do not cover VDPBF16PS's latency (bench/results/cpu-tuning.md).
TILEOPS_DPBF16_TARGET void packed_block(const std::uint16_t* x, const std::uint16_t* w,
                                        std::int64_t pairs, float* acc, bool accumulate,
                                        bool fetch) {
  __m512 sum[16];
  for (auto& s : sum) s = _mm512_setzero_ps();
  for (std::int64_t q = 0; q < pairs; ++q) {
    const std::uint16_t* wq = w + q * 32;  // one 64-byte line per pair
    if (fetch) __builtin_prefetch(reinterpret_cast<const char*>(wq) + kPackedFetchBytes, 0, 2);
    const __m512bh xv = load_pairs(x + q * 32);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) sum[j] = _mm512_dpbf16_ps(sum[j], xv, broadcast_pair(wq + 2 * j));
  }
  for (int j = 0; j < 16; ++j) {
    float* out = acc + j * 16;
    _mm512_storeu_ps(out, accumulate ? _mm512_add_ps(sum[j], _mm512_loadu_ps(out)) : sum[j]);
  }
}

TILEOPS_DPBF16_TARGET void packed_half_blocks(const std::uint16_t* x0, const std::uint16_t* x1,
                                              const std::uint16_t* w, std::int64_t pairs,
                                              float* acc0, float* acc1, bool accumulate,
                                              bool fetch) {
  __m512 sum0[8], sum1[8];
  for (int j = 0; j < 8; ++j) sum0[j] = sum1[j] = _mm512_setzero_ps();
  for (std::int64_t q = 0; q < pairs; ++q) {
    const std::uint16_t* wq = w + q * 32;
    if (fetch) __builtin_prefetch(reinterpret_cast<const char*>(wq) + kPackedFetchBytes, 0, 2);
    const __m512bh xv0 = load_pairs(x0 + q * 32), xv1 = load_pairs(x1 + q * 32);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m512bh wv = broadcast_pair(wq + 2 * j);
      sum0[j] = _mm512_dpbf16_ps(sum0[j], xv0, wv);
      sum1[j] = _mm512_dpbf16_ps(sum1[j], xv1, wv);
    }
  }
  for (int j = 0; j < 8; ++j) {
    float* out0 = acc0 + j * 16;
    float* out1 = acc1 + j * 16;
    _mm512_storeu_ps(out0, accumulate ? _mm512_add_ps(sum0[j], _mm512_loadu_ps(out0)) : sum0[j]);
    _mm512_storeu_ps(out1, accumulate ? _mm512_add_ps(sum1[j], _mm512_loadu_ps(out1)) : sum1[j]);
  }
}

// kChunks blocks of 16 x rows (pair-interleaved) against kRows weight rows in place (ld_w apart):
// per pair kChunks x loads and kRows broadcasts feed kRows·kChunks dot products.
// `lines` 64-byte lines from `fetch` on are requested into L2 one every pairs / lines pairs.
template <int kRows, int kChunks>
TILEOPS_DPBF16_TARGET void row_weights_block(const std::uint16_t* const* x, const std::uint16_t* w,
                                             std::int64_t ld_w, std::int64_t pairs,
                                             float* const* acc, bool accumulate, const char* fetch,
                                             std::int64_t lines) {
  __m512 sum[kChunks][kRows];
  for (int c = 0; c < kChunks; ++c) {
    for (int j = 0; j < kRows; ++j) sum[c][j] = _mm512_setzero_ps();
  }
  const std::int64_t every = lines > 0 ? std::max<std::int64_t>(1, pairs / lines) : pairs + 1;
  std::int64_t countdown = every;
  for (std::int64_t q = 0; q < pairs; ++q) {
    if (--countdown == 0) {
      countdown = every;
      if (lines > 0) __builtin_prefetch(fetch, 0, 2), fetch += 64, --lines;
    }
    __m512bh xv[kChunks];
    for (int c = 0; c < kChunks; ++c) xv[c] = load_pairs(x[c] + q * 32);
#pragma GCC unroll 16
    for (int j = 0; j < kRows; ++j) {
      const __m512bh wv = broadcast_pair(w + j * ld_w + 2 * q);
      for (int c = 0; c < kChunks; ++c) sum[c][j] = _mm512_dpbf16_ps(sum[c][j], xv[c], wv);
    }
  }
  for (int c = 0; c < kChunks; ++c) {
    for (int j = 0; j < kRows; ++j) {
      float* out = acc[c] + j * 16;
      _mm512_storeu_ps(out,
                       accumulate ? _mm512_add_ps(sum[c][j], _mm512_loadu_ps(out)) : sum[c][j]);
    }
  }
}

}  // namespace

bool dpbf16_enabled() {
  // Off when TILEOPS_SIMD_TARGET forces a target below AVX-512 (the dispatch mask then lacks
  // AVX3 too, but the hand-written path must not depend on that), and while a test narrows
  // Highway's targets. Not hwy::SupportedTargets(): it runs CPUID on every call, a trap to the
  // host in a VM (about 25 µs per linear call on this project's Zen 5 VM).
  return cpu_avx512_bf16() && simd_target_allows_avx512() && simd_dispatches_avx512();
}

// Triples of B strips outside (3·kc·64 bytes, 48 KiB at kc = 256, from L1 or L2), the row tiles'
// halves inside (the A block streams from L2).
void dpbf16_block(const std::uint16_t* a, std::int64_t rows, std::int64_t kc,
                  const std::uint16_t* b, std::int64_t n_strips, float* acc, std::int64_t ld_acc,
                  bool accumulate) {
  for (std::int64_t t = 0; t < n_strips;) {
    // Groups of 3 strips; a last strip alone would be load-bound (one B load per 16 rows'
    // broadcasts), so 4 strips left go as 2 + 2.
    const std::int64_t left = n_strips - t;
    const std::int64_t group = left == 4 ? 2 : std::min<std::int64_t>(3, left);
    const std::uint16_t* bt = b + t * kc * kTileRows;
    for (std::int64_t i = 0; i < rows; i += kTileRows) {
      const std::uint16_t* ai = a + i * kc;
      float* ci = acc + i * ld_acc + t * kTileRows;
      switch (group) {
        case 3:
          dp_tile<8, 3>(ai, bt, kc, ci, ld_acc, accumulate);
          dp_tile<8, 3>(ai + 8 * kStepK, bt, kc, ci + 8 * ld_acc, ld_acc, accumulate);
          break;
        case 2:
          dp_tile<8, 2>(ai, bt, kc, ci, ld_acc, accumulate);
          dp_tile<8, 2>(ai + 8 * kStepK, bt, kc, ci + 8 * ld_acc, ld_acc, accumulate);
          break;
        default:
          dp_tile<16, 1>(ai, bt, kc, ci, ld_acc, accumulate);
      }
    }
    t += group;
  }
}

// One x row: 12 weight rows give 12 independent chains; more rows: 6 weight rows × 4 x rows.
void dpbf16_dot_rows(const std::uint16_t* x, std::int64_t ld_x, std::int64_t m,
                     const std::uint16_t* w, std::int64_t ld_w, std::int64_t n, std::int64_t k,
                     float* out, std::int64_t ld_out) {
  if (m > 16) throw_internal_error("dpbf16_dot_rows", "at most 16 rows of x");
  std::int64_t j = 0;
  if (m == 1) {
    for (; j + 12 <= n; j += 12)
      dot_group<12, 1>(x, ld_x, m, w + j * ld_w, ld_w, k, out + j, ld_out);
  }
  for (; j + 6 <= n; j += 6) dot_group<6, 4>(x, ld_x, m, w + j * ld_w, ld_w, k, out + j, ld_out);
  for (; j < n; ++j) dot_group<1, 4>(x, ld_x, m, w + j * ld_w, ld_w, k, out + j, ld_out);
}

void dpbf16_packed_block(const std::uint16_t* x, const std::uint16_t* w, std::int64_t pairs,
                         float* acc, bool accumulate, bool fetch) {
  packed_block(x, w, pairs, acc, accumulate, fetch);
}

void dpbf16_packed_half_blocks(const std::uint16_t* x0, const std::uint16_t* x1,
                               const std::uint16_t* w, std::int64_t pairs, float* acc0, float* acc1,
                               bool accumulate, bool fetch) {
  packed_half_blocks(x0, x1, w, pairs, acc0, acc1, accumulate, fetch);
}

void dpbf16_row_weights_block(const std::uint16_t* x0, const std::uint16_t* x1,
                              const std::uint16_t* w, std::int64_t ld_w, std::int64_t pairs,
                              float* acc0, float* acc1, bool accumulate, const void* fetch,
                              std::int64_t fetch_lines) {
  const auto* lines = static_cast<const char*>(fetch);
  if (x1 == nullptr) {
    const std::uint16_t* x[] = {x0};
    float* acc[] = {acc0};
    return row_weights_block<16, 1>(x, w, ld_w, pairs, acc, accumulate, lines, fetch_lines);
  }
  const std::uint16_t* x[] = {x0, x1};
  const std::int64_t first = (fetch_lines + 1) / 2;  // the halves' shares of the lines
  for (int h = 0; h < 2; ++h) {
    float* acc[] = {acc0 + 128 * h, acc1 + 128 * h};
    row_weights_block<8, 2>(x, w + 8 * h * ld_w, ld_w, pairs, acc, accumulate,
                            lines + (h == 0 ? 0 : first * 64),
                            h == 0 ? first : fetch_lines - first);
  }
}

TILEOPS_DPBF16_WARNINGS_ON

#else  // no AVX512-BF16 code on this platform

bool dpbf16_enabled() { return false; }

void dpbf16_block(const std::uint16_t*, std::int64_t, std::int64_t, const std::uint16_t*,
                  std::int64_t, float*, std::int64_t, bool) {
  throw Error(ErrorKind::kUnsupported, "dpbf16_block: AVX512-BF16 is not available here");
}

void dpbf16_dot_rows(const std::uint16_t*, std::int64_t, std::int64_t, const std::uint16_t*,
                     std::int64_t, std::int64_t, std::int64_t, float*, std::int64_t) {
  throw Error(ErrorKind::kUnsupported, "dpbf16_dot_rows: AVX512-BF16 is not available here");
}

void dpbf16_packed_block(const std::uint16_t*, const std::uint16_t*, std::int64_t, float*, bool,
                         bool) {
  throw Error(ErrorKind::kUnsupported, "dpbf16_packed_block: AVX512-BF16 is not available here");
}

void dpbf16_packed_half_blocks(const std::uint16_t*, const std::uint16_t*, const std::uint16_t*,
                               std::int64_t, float*, float*, bool, bool) {
  throw Error(ErrorKind::kUnsupported,
              "dpbf16_packed_half_blocks: AVX512-BF16 is not available here");
}

void dpbf16_row_weights_block(const std::uint16_t*, const std::uint16_t*, const std::uint16_t*,
                              std::int64_t, std::int64_t, float*, float*, bool, const void*,
                              std::int64_t) {
  throw Error(ErrorKind::kUnsupported,
              "dpbf16_row_weights_block: AVX512-BF16 is not available here");
}

#endif

}  // namespace tileops::ops::cpu
