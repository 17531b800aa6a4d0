// linear_quantized on CPU. One row of x (decode) streams each thread's share of the tiles once
// through quantized_dots_m1, dequantizing in registers. Up to kChunkRows rows dequantize a panel
// of kPanelTiles tiles at a time into a small float32 buffer (L2) and run the float32 decode dot
// kernel over it, so the weight is still read from memory once. More rows (prefill) run the
// float32 GEMM's register-tiled kernel: per K block, nr weight rows dequantized and laid out as
// its B strip (never a full-size float copy of the weight), against x packed in strips.
// bfloat16 rows on CPUs with VDPBF16PS dequantize into bfloat16 instead (int8 codes per channel,
// exact; s·(q − z) rounded per group) for that instruction's kernels, twice the multiply-adds of
// a float32 FMA: up to kChunkRows rows the panel path with its dot kernel, more rows against x
// packed in blocks of 16 rows (bf16_chunk_rows).
#include <algorithm>
#include <cstring>

#include "src/ops/contracts/linear_quantized.decl.h"
#include "src/ops/contracts/quantized_format.h"
#include "src/ops/cpu/gemm/quantize_weight.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/dpbf16_dequantize.h"
#include "src/ops/cpu/simd/dpbf16_int4_kernels.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "src/ops/cpu/simd/quantized_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::int64_t kTile = kQuantizedTileRows;
// 12 weight rows per panel: whole groups of the dot kernel's 6 (AVX-512), 4 and 3 (AVX2) rows,
// and 48·K bytes of float32 (192 KiB at K = 4096) that stay in L2 while every x chunk reads them.
constexpr std::int64_t kPanelTiles = 3;
constexpr std::int64_t kChunkRows = 16;  // x rows per call of the dot kernel (its limit)
// 48 rows of bfloat16 (192 KiB at K = 2048, in L2): every chunk of x rows reads a panel once.
constexpr std::int64_t kBf16PanelTiles = 12;
// The GEMM path: x rows packed at once (their strips, all of K: 4 MiB at K = 4096), and K block
// lengths as the native GEMM's (its B strip, kc × nr floats, stays in L2).
constexpr std::int64_t kRowBlock = 256;
constexpr std::int64_t kMaxKc = 256;  // nr = 48 (AVX-512): twice this
constexpr std::int64_t kMaxNr = 64;   // gemm_nr() on every target

QuantizedBlocks blocks_of(const QuantizedLayout& l) {
  return {l.bits,       l.has_zeros(),    l.group,       l.groups_per_row,
          l.meta_bytes, l.row_code_bytes, l.block_bytes, l.run_bytes};
}

// What every path shares: x as float32 rows (zero past K), the bias, and the epilogue.
struct Job {
  const QuantizedLayout& l;
  QuantizedBlocks q;
  const std::uint8_t* weights;
  const Tensor& out;
  RowOffsets out_rows;
  const float* bias32;  // null: no bias
  const float* x;
  std::int64_t ld_x;
  bool direct;  // float32 out with contiguous rows: the epilogue writes it in place

  // Columns [col0, col0 + cols) of out's row i from the float32 sums in acc (scratch: cols floats).
  void store(std::int64_t i, std::int64_t col0, std::int64_t cols, const float* acc,
             float* scratch) const {
    char* dst = element_at(out, out_rows(i) + col0 * out.stride(-1));
    float* result = direct ? reinterpret_cast<float*>(dst) : scratch;
    gemm_epilogue_row(acc, 1.0f, nullptr, 0.0f, bias32 != nullptr ? bias32 + col0 : nullptr, cols,
                      result);
    if (!direct) store_f32(result, dst, out.dtype(), out.stride(-1), cols);
  }
};

// One row: each thread streams its tiles once, dequantizing in registers; int4 in groups of 32
// against bfloat16 x on VDPBF16PS CPUs through dpbf16_int4_dots_m1 over x as it prepared it
// (else null): decode of an 8-layer 2048-wide model ran 1.4-1.8x faster with it on Zen 5, where
// groups of 128 ran slower than the float32 kernel (fewer scale vectors to save).
// Other int8 and int4 weights against bfloat16 x take x as 16-bit fixed point (fixed_x, else
// null; see quantized_int8_fixed_dots_m1): 16-bit integer multiply-adds instead of a float
// conversion of every code (int4 in groups of 128 on one Zen 5 core: 1.5x the float32 kernel,
// 2x on avx2, 2.4x on sse4).
struct FixedX {
  const std::int16_t* v = nullptr;
  const float* scales = nullptr;
  const float* sums = nullptr;  // int4: the blocks' sums
};

void one_row(const Job& job, const float* int4_x, const FixedX& fixed_x, float* acc, float* scratch,
             ThreadPool& pool) {
  const QuantizedLayout& l = job.l;
  pool.parallel_range(l.tiles, 16, [&](int chunk, std::int64_t t0, std::int64_t t1) {
    const std::uint8_t* tiles = job.weights + l.block_offset(t0, 0);
    if (int4_x != nullptr) {
      dpbf16_int4_dots_m1(int4_x, tiles, t1 - t0, job.q, acc + t0 * kTile);
    } else if (fixed_x.v != nullptr && job.q.bits == 4) {
      quantized_int4_fixed_dots_m1(fixed_x.v, fixed_x.scales, fixed_x.sums, tiles, t1 - t0, job.q,
                                   acc + t0 * kTile);
    } else if (fixed_x.v != nullptr) {
      quantized_int8_fixed_dots_m1(fixed_x.v, fixed_x.scales, tiles, t1 - t0, job.q,
                                   acc + t0 * kTile);
    } else {
      quantized_dots_m1(job.x, tiles, t1 - t0, job.q, acc + t0 * kTile);
    }
    const std::int64_t col0 = t0 * kTile;
    job.store(0, col0, std::min(t1 * kTile, l.n) - col0, acc + col0, scratch + chunk * l.n);
  });
}

// A few rows: panels of kPanelTiles tiles dequantized into L2, the float32 dot kernel over them
// for every chunk of kChunkRows rows. acc: m × ld_out; per thread a panel and an epilogue row.
void few_rows(const Job& job, std::int64_t m, float* acc, std::int64_t ld_out, float* per_thread,
              std::int64_t per_thread_floats, ThreadPool& pool) {
  const QuantizedLayout& l = job.l;
  const std::int64_t ld_panel = job.ld_x;
  const std::int64_t num_panels = ceil_div(l.tiles, kPanelTiles);
  pool.parallel_range(num_panels, 1, [&](int chunk, std::int64_t p0, std::int64_t p1) {
    float* panel = per_thread + chunk * per_thread_floats;
    float* scratch = panel + kPanelTiles * kTile * ld_panel;
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t t0 = p * kPanelTiles, t1 = std::min(l.tiles, t0 + kPanelTiles);
      dequantize_tiles(job.weights + l.block_offset(t0, 0), t1 - t0, job.q, 0, l.k_padded, true,
                       panel, ld_panel);
      for (std::int64_t i = 0; i < m; i += kChunkRows) {
        gemm_dot_rows(job.x + i * job.ld_x, job.ld_x, std::min(kChunkRows, m - i), panel,
                      DataType::kFloat32, ld_panel, (t1 - t0) * kTile, l.k_padded,
                      acc + i * ld_out + t0 * kTile, ld_out);
      }
    }
    const std::int64_t col0 = p0 * kPanelTiles * kTile;
    const std::int64_t cols = std::min(p1 * kPanelTiles * kTile, l.n) - col0;
    for (std::int64_t i = 0; i < m; ++i) job.store(i, col0, cols, acc + i * ld_out + col0, scratch);
  });
}

// bfloat16 rows with VDPBF16PS: panels of kBf16PanelTiles tiles dequantized into bfloat16, then the
// bfloat16 dot kernel for every chunk of kChunkRows rows of x16 (x as bfloat16, exact); the sums
// stay float32. Per channel, the panel holds the int8 codes (exact in bfloat16) and the scales
// multiply the sums; per group, the panel holds s·(q − z) rounded to bfloat16 (relative 2^-9, as
// the activations' own rounding). Per thread: the panel and an epilogue row.
void bf16_rows(const Job& job, std::int64_t m, const std::uint16_t* x16, float* acc,
               std::int64_t ld_out, float* per_thread, std::int64_t per_thread_floats,
               ThreadPool& pool) {
  const QuantizedLayout& l = job.l;
  const std::int64_t ld = job.ld_x;  // of the panel and of x16
  const bool per_channel = l.groups_per_row == 1;
  const std::int64_t num_panels = ceil_div(l.tiles, kBf16PanelTiles);
  pool.parallel_range(num_panels, 1, [&](int chunk, std::int64_t p0, std::int64_t p1) {
    auto* panel = reinterpret_cast<std::uint16_t*>(per_thread + chunk * per_thread_floats);
    float* scratch = per_thread + chunk * per_thread_floats + kBf16PanelTiles * kTile * ld / 2;
    for (std::int64_t p = p0; p < p1; ++p) {
      const std::int64_t t0 = p * kBf16PanelTiles, t1 = std::min(l.tiles, t0 + kBf16PanelTiles);
      dpbf16_dequantize_tiles(job.weights + l.block_offset(t0, 0), t1 - t0, job.q, 0, l.k_padded,
                              !per_channel, panel, ld);
      for (std::int64_t i = 0; i < m; i += kChunkRows) {
        dpbf16_dot_rows(x16 + i * ld, ld, std::min(kChunkRows, m - i), panel, ld, (t1 - t0) * kTile,
                        l.k_padded, acc + i * ld_out + t0 * kTile, ld_out);
      }
      if (per_channel) {
        for (std::int64_t t = t0; t < t1; ++t) {
          float scale[kTile];  // the block's first bytes (quantized_format.h)
          std::memcpy(scale, job.weights + l.block_offset(t, 0), sizeof(scale));
          for (std::int64_t i = 0; i < m; ++i) {
            for (std::int64_t r = 0; r < kTile; ++r) acc[i * ld_out + t * kTile + r] *= scale[r];
          }
        }
      }
    }
    const std::int64_t col0 = p0 * kBf16PanelTiles * kTile;
    const std::int64_t cols = std::min(p1 * kBf16PanelTiles * kTile, l.n) - col0;
    for (std::int64_t i = 0; i < m; ++i) job.store(i, col0, cols, acc + i * ld_out + col0, scratch);
  });
}

// While a thread's panel of tiles [t0, t1) multiplies, the codes of its next one (when `more`)
// come into L2 in `steps` equal requests: its dequantization would otherwise wait on memory
// with nothing to overlap (int8 at 32 rows: 1.1x).
class NextPanelFetch {
 public:
  NextPanelFetch(const Job& job, std::int64_t t1, bool more, std::int64_t steps)
      : weights_(job.weights), at_(job.l.block_offset(t1, 0)) {
    end_ = more ? job.l.block_offset(std::min(job.l.tiles, t1 + kBf16PanelTiles), 0) : at_;
    per_step_ = round_up(ceil_div(end_ - at_, std::max<std::int64_t>(steps, 1)), 64);
  }
  // This step's share: lines of 64 bytes from the returned address, for the kernel to request.
  const std::uint8_t* take(std::int64_t& lines) {
    const std::int64_t stop = std::min(end_, at_ + per_step_);
    lines = std::max<std::int64_t>(0, ceil_div(stop - at_, 64));
    const std::uint8_t* from = weights_ + at_;
    at_ = std::max(at_, stop);
    return from;
  }

 private:
  const std::uint8_t* weights_;
  std::int64_t at_, end_, per_step_;
};

// More bfloat16 rows than one chunk of the dot kernel, with VDPBF16PS or AMX. Per block of up to
// kRowBlock rows, x is packed once as the pair-interleaved chunks of 16 rows that the packed
// linear uses, so that one x load feeds 8 or 16 weight rows, broadcast from the panel in place;
// each thread then takes panels of kBf16PanelTiles tiles dequantized as bf16_rows does. 1.0-1.1x
// the bfloat16 GEMM's block kernel with the weight dequantized into its row tiles at 64-512 rows
// (2 threads, Zen 4, N = 11264, K = 2048), and more below (its strips of 48 rows were padded).
struct Bf16ChunkBlocks {
  static constexpr std::int64_t kPanelRows = kBf16PanelTiles * kTile;
  static constexpr std::int64_t kBlockPairs = 128;  // K per block: 16 x rows in 8 KiB of L1
  static constexpr std::int64_t kRowBlock = 128;    // x rows per block: 512 KiB at K = 2048
  std::int64_t chunks;                              // of a row block

  explicit Bf16ChunkBlocks(std::int64_t m) : chunks(ceil_div(std::min(m, kRowBlock), kAmxCols)) {}
  // x's chunks: chunks × k_padded × 16 bfloat16.
  std::int64_t x_floats(const QuantizedLayout& l) const {
    return round_up(chunks * kAmxCols * l.k_padded / 2, 16);
  }
  // Per thread: the panel, its sums ([chunk][weight row][x row]; on AMX [weight row][chunk][x
  // row]), those of one chunk transposed ([x row][weight row]) and an epilogue row.
  std::int64_t per_thread_floats(std::int64_t ld) const {
    return round_up(kPanelRows * ld / 2 + (chunks + 1) * kPanelRows * kAmxCols + kPanelRows, 16);
  }
};
static_assert(Bf16ChunkBlocks::kPanelRows % kAmxCols == 0);

// Rows [i0, i0 + rows) of x16 (ld apart, k wide) as chunks of 16 rows, zero past `rows`: element
// (k, j) of chunk c at chunks[c·k·16 + k / 2 · 32 + 2j + k % 2], the rows' 32-bit pairs
// transposed.
void pack_x_chunks(const std::uint16_t* x16, std::int64_t ld, std::int64_t i0, std::int64_t rows,
                   std::int64_t k, std::uint16_t* chunks) {
  for (std::int64_t c = 0; c * kAmxCols < rows; ++c) {
    auto* chunk = reinterpret_cast<float*>(chunks + c * k * kAmxCols);
    const std::int64_t live = std::min(kAmxCols, rows - c * kAmxCols);
    if (live < kAmxCols) std::fill(chunk, chunk + k / 2 * kAmxCols, 0.0f);
    const float* words[kAmxCols];
    for (std::int64_t j = 0; j < live; ++j) {
      words[j] = reinterpret_cast<const float*>(x16 + (i0 + c * kAmxCols + j) * ld);
    }
    gemm_transpose_rows(words, live, k / 2, chunk, kAmxCols);
  }
}

void bf16_chunk_rows(const Job& job, std::int64_t m, const std::uint16_t* x16,
                     const Bf16ChunkBlocks& b, std::uint16_t* x_chunks, float* per_thread,
                     ThreadPool& pool) {
  using B = Bf16ChunkBlocks;
  const QuantizedLayout& l = job.l;
  const std::int64_t ld = job.ld_x;  // of the panel and of x16
  const std::int64_t pairs_k = l.k_padded / 2;
  const bool per_channel = l.groups_per_row == 1;
  const std::int64_t num_panels = ceil_div(l.tiles, kBf16PanelTiles);
  // On AMX the panel's 16-row tiles multiply every chunk over all of K (amx_bf16_rows), summed
  // as [weight row][x row of the block].
  const bool amx = amx_bf16_enabled();
  for (std::int64_t i0 = 0; i0 < m; i0 += B::kRowBlock) {
    const std::int64_t rows = std::min(B::kRowBlock, m - i0), chunks = ceil_div(rows, kAmxCols);
    pack_x_chunks(x16, ld, i0, rows, l.k_padded, x_chunks);
    pool.parallel_range(num_panels, 1, [&](int thread, std::int64_t p0, std::int64_t p1) {
      float* area = per_thread + thread * b.per_thread_floats(ld);
      auto* panel = reinterpret_cast<std::uint16_t*>(area);
      float* sums = area + B::kPanelRows * ld / 2;
      float* by_row = sums + b.chunks * B::kPanelRows * kAmxCols;
      float* scratch = by_row + B::kPanelRows * kAmxCols;
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t t0 = p * kBf16PanelTiles, t1 = std::min(l.tiles, t0 + kBf16PanelTiles);
        const std::int64_t live = (t1 - t0) * kTile, live_pad = round_up(live, kAmxCols);
        dpbf16_dequantize_tiles(job.weights + l.block_offset(t0, 0), t1 - t0, job.q, 0, l.k_padded,
                                !per_channel, panel, ld);
        // The last group's rows past the weight's: zero (their sums are dropped).
        std::fill(panel + live * ld, panel + live_pad * ld, std::uint16_t{0});
        if (amx) {
          amx_bf16_rows(panel, ld, live_pad / kAmxRows, l.k_padded, x_chunks, chunks, sums,
                        chunks * kAmxCols, false);
        } else {
          NextPanelFetch fetch(job, t1, p + 1 < p1,
                               ceil_div(pairs_k, B::kBlockPairs) * (live_pad / kAmxCols));
          for (std::int64_t q0 = 0; q0 < pairs_k; q0 += B::kBlockPairs) {
            const std::int64_t pairs = std::min(B::kBlockPairs, pairs_k - q0);
            const auto x_of = [&](std::int64_t c) {
              return x_chunks + (c * l.k_padded + q0 * 2) * kAmxCols;
            };
            for (std::int64_t g = 0; g < live_pad; g += kAmxCols) {
              std::int64_t lines = 0;
              const std::uint8_t* next = fetch.take(lines);
              const auto sums_of = [&](std::int64_t c) {
                return sums + (c * B::kPanelRows + g) * kAmxCols;
              };
              for (std::int64_t c = 0; c < chunks; c += 2) {  // two at a time, the last alone
                const bool two = c + 1 < chunks;
                dpbf16_row_weights_block(
                    x_of(c), two ? x_of(c + 1) : nullptr, panel + g * ld + q0 * 2, ld, pairs,
                    sums_of(c), two ? sums_of(c + 1) : nullptr, q0 > 0, next, c == 0 ? lines : 0);
              }
            }
          }
        }
        float scale[B::kPanelRows];
        if (per_channel) {  // the scales: each block's first bytes (quantized_format.h)
          for (std::int64_t r = 0; r < live; ++r) {
            std::memcpy(&scale[r],
                        job.weights + l.block_offset(t0 + r / kTile, 0) + r % kTile * sizeof(float),
                        sizeof(float));
          }
        }
        const std::int64_t col0 = t0 * kTile, cols = std::min(t1 * kTile, l.n) - col0;
        for (std::int64_t c = 0; c < chunks; ++c) {
          const float* weight_rows[B::kPanelRows];
          for (std::int64_t r = 0; r < live; ++r) {
            weight_rows[r] = amx ? sums + (r * chunks + c) * kAmxCols
                                 : sums + (c * B::kPanelRows + r) * kAmxCols;
          }
          gemm_transpose_rows(weight_rows, live, kAmxCols, by_row, B::kPanelRows);
          for (std::int64_t i = c * kAmxCols; i < std::min(rows, (c + 1) * kAmxCols); ++i) {
            float* row = by_row + (i - c * kAmxCols) * B::kPanelRows;
            if (per_channel) {
              for (std::int64_t r = 0; r < live; ++r) row[r] *= scale[r];
            }
            job.store(i0 + i, col0, cols, row, scratch);
          }
        }
      }
    });
  }
}

// The GEMM path's blocking: K blocks of whole groups (int4 dequantizes whole groups).
struct GemmBlocks {
  std::int64_t nr, kc, k_blocks, strips;  // strips: of kGemmMr rows in a row block

  GemmBlocks(const QuantizedLayout& l, std::int64_t m) {
    nr = gemm_nr();
    const std::int64_t align = l.groups_per_row > 1 ? l.group : kQuantizedKAlign;
    k_blocks = ceil_div(l.k_padded, nr >= 48 ? 2 * kMaxKc : kMaxKc);
    kc = std::min(l.k_padded, round_up(ceil_div(l.k_padded, k_blocks), align));
    k_blocks = ceil_div(l.k_padded, kc);
    strips = ceil_div(std::min(m, kRowBlock), kGemmMr);
  }
  // Per thread: the dequantized rows (nr × kc), their B strip, the accumulator and a row.
  std::int64_t per_thread_floats() const {
    return round_up(2 * nr * kc + strips * kGemmMr * nr + nr, 16);
  }
};

// More rows: per row block, x packed as A strips for every K block; then each thread takes
// panels of nr weight rows and, per K block, dequantizes them into a B strip for the
// register-tiled kernel. a_pack: strips·kGemmMr × k_blocks·kc floats.
void many_rows(const Job& job, std::int64_t m, const GemmBlocks& b, float* a_pack,
               float* per_thread, ThreadPool& pool) {
  const QuantizedLayout& l = job.l;
  const std::int64_t nr = b.nr, kc = b.kc;
  const std::int64_t tiles_per_panel = nr / kTile;
  const std::int64_t num_panels = ceil_div(l.tiles, tiles_per_panel);
  for (std::int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
    const std::int64_t rows = std::min(kRowBlock, m - i0), strips = ceil_div(rows, kGemmMr);
    // A block kb: strips of kcur × kGemmMr floats from a_pack + kb·kc·strips·kGemmMr.
    pool.parallel_range(b.k_blocks * strips, 4, [&](int, std::int64_t begin, std::int64_t end) {
      for (std::int64_t task = begin; task < end; ++task) {
        const std::int64_t kb = task / strips, s = task % strips;
        const std::int64_t k0 = kb * kc, kcur = std::min(kc, l.k_padded - k0);
        float* strip = a_pack + kb * kc * strips * kGemmMr + s * kcur * kGemmMr;
        const std::int64_t live = std::min(kGemmMr, rows - s * kGemmMr);
        const float* x_rows[kGemmMr];
        for (std::int64_t r = 0; r < live; ++r) {
          x_rows[r] = job.x + (i0 + s * kGemmMr + r) * job.ld_x + k0;
        }
        if (live < kGemmMr) std::fill(strip, strip + kcur * kGemmMr, 0.0f);
        gemm_transpose_rows(x_rows, live, kcur, strip, kGemmMr);
      }
    });
    pool.parallel_claim(num_panels, [&](int chunk, std::int64_t p) {
      float* rows_f32 = per_thread + chunk * b.per_thread_floats();
      float* b_strip = rows_f32 + nr * kc;
      float* acc = b_strip + nr * kc;
      float* scratch = acc + strips * kGemmMr * nr;
      const std::int64_t t0 = p * tiles_per_panel, t1 = std::min(l.tiles, t0 + tiles_per_panel);
      const std::int64_t live = (t1 - t0) * kTile;
      for (std::int64_t kb = 0; kb < b.k_blocks; ++kb) {
        const std::int64_t k0 = kb * kc, kcur = std::min(kc, l.k_padded - k0);
        dequantize_tiles(job.weights + l.block_offset(t0, 0), t1 - t0, job.q, k0, k0 + kcur, true,
                         rows_f32, kc);
        const float* w_rows[kMaxNr];
        for (std::int64_t r = 0; r < live; ++r) w_rows[r] = rows_f32 + r * kc;
        if (live < nr) std::fill(b_strip, b_strip + kcur * nr, 0.0f);
        gemm_transpose_rows(w_rows, live, kcur, b_strip, nr);
        gemm_macro_kernel(a_pack + kb * kc * strips * kGemmMr, strips, b_strip, 1, kcur, acc, nr,
                          kb > 0);
      }
      const std::int64_t col0 = t0 * kTile, cols = std::min(t1 * kTile, l.n) - col0;
      for (std::int64_t i = 0; i < rows; ++i) job.store(i0 + i, col0, cols, acc + i * nr, scratch);
    });
  }
}

class LinearQuantizedCpu final : public Operator {
 public:
  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[tensor_index(decls::linear_quantized, "input")];
    const Tensor& qweight = tensors[tensor_index(decls::linear_quantized, "qweight")];
    const Tensor& bias = tensors[tensor_index(decls::linear_quantized, "bias")];
    const Tensor& out = tensors[tensor_index(decls::linear_quantized, "out")];
    // The contract validated this buffer; it is read again here because the kernels index by it.
    const QuantizedLayout l =
        read_quantized_header("linear_quantized", "qweight", qweight.data(), qweight.numel());
    if (l.k != input.size(-1) || l.n != out.size(-1)) {
      throw_internal_error("linear_quantized", "qweight's header disagrees with the contract's");
    }
    const RowOffsets in_rows(input);
    const std::int64_t m = in_rows.rows();
    if (m == 0) return;
    ThreadPool& pool = ctx.threads();
    const std::int64_t threads = pool.num_threads();
    const std::int64_t ld_x = (l.k_padded + 15) / 16 * 16 + 16;  // off multiples of 4 KiB
    const std::int64_t ld_out = l.tiles * kTile;
    const GemmBlocks blocks(l, m);
    // Scratch per path: the one-row and panel paths sum into acc (m × ld_out), the GEMM and
    // bfloat16 chunk paths into each thread's sums; per thread the path's panel or strips.
    const bool bf16_input = input.dtype() == DataType::kBFloat16 && dpbf16_enabled();
    const bool bf16 = m > 1 && bf16_input;
    const bool int4_bf16 = m == 1 && bf16_input && l.bits == 4 && l.group == 32;
    const bool fixed = m == 1 && input.dtype() == DataType::kBFloat16 && !int4_bf16;
    const std::int64_t fixed_blocks = ceil_div(l.k_padded, quantized_fixed_x_block(blocks_of(l)));
    const std::int64_t fixed_floats = fixed ? round_up(l.k_padded / 2 + 2 * fixed_blocks, 16) : 0;
    const bool gemm = !bf16 && m > kChunkRows && blocks.nr % kTile == 0 && blocks.nr <= kMaxNr;
    const bool bf16_chunks = bf16 && m > kChunkRows;
    const Bf16ChunkBlocks chunk_blocks(m);
    const std::int64_t acc_floats = gemm || bf16_chunks ? 0 : m * ld_out;
    const std::int64_t x16_floats = bf16 || int4_bf16 ? round_up(m * ld_x / 2 + 1, 16) : 0;
    const std::int64_t int4_floats =
        int4_bf16 ? round_up(dpbf16_int4_x_floats(blocks_of(l)), 16) : 0;
    const std::int64_t per_thread =
        gemm          ? blocks.per_thread_floats()
        : bf16_chunks ? chunk_blocks.per_thread_floats(ld_x)
        : bf16        ? round_up(kTile * ld_x + kBf16PanelTiles * kTile * ld_x / 2 + l.n, 16)
        : m == 1      ? l.n
                      : kPanelTiles * kTile * ld_x + l.n;
    const std::int64_t a_pack = gemm ? blocks.strips * kGemmMr * blocks.k_blocks * blocks.kc
                                : bf16_chunks ? chunk_blocks.x_floats(l)
                                              : 0;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        workspace_bytes({{round_up(ld_out, 16)},
                         {m, ld_x},
                         {round_up(acc_floats, 16)},
                         {round_up(a_pack, 16)},
                         {x16_floats},
                         {int4_floats},
                         {fixed_floats},
                         {threads, per_thread}},
                        sizeof(float), "linear_quantized: argument 'input': its workspace"));
    float* bias32 = lease.as<float>();
    float* x = bias32 + round_up(ld_out, 16);
    float* acc = x + m * ld_x;
    float* a_packed = acc + round_up(acc_floats, 16);
    auto* x16 = reinterpret_cast<std::uint16_t*>(a_packed + round_up(a_pack, 16));
    float* int4_x = a_packed + round_up(a_pack, 16) + x16_floats;
    float* fixed_area = int4_x + int4_floats;
    float* thread_area = fixed_area + fixed_floats;
    const bool has_bias = bias.data() != nullptr;
    if (has_bias) load_f32(bias.data(), bias.dtype(), bias.stride(0), l.n, bias32);
    for (std::int64_t i = 0; i < m; ++i) {
      load_f32(element_at(input, in_rows(i)), input.dtype(), input.stride(-1), l.k, x + i * ld_x);
      std::fill(x + i * ld_x + l.k, x + (i + 1) * ld_x, 0.0f);
      if (bf16 || int4_bf16) {
        store_f32(x + i * ld_x, x16 + i * ld_x, DataType::kBFloat16, 1, ld_x);  // exact
      }
    }
    const Job job{l,
                  blocks_of(l),
                  static_cast<const std::uint8_t*>(qweight.data()),
                  out,
                  RowOffsets(out),
                  has_bias ? bias32 : nullptr,
                  x,
                  ld_x,
                  input.dtype() == DataType::kFloat32 && out.stride(-1) == 1};
    if (int4_bf16) dpbf16_int4_prepare_x(x16, job.q, int4_x);
    FixedX fixed_x;
    if (fixed) {
      auto* v = reinterpret_cast<std::int16_t*>(fixed_area);
      float* scales = fixed_area + l.k_padded / 2;
      float* sums = scales + fixed_blocks;
      if (quantized_fixed_x(x, job.q, v, scales, sums)) fixed_x = {v, scales, sums};
    }
    if (m == 1) {
      return one_row(job, int4_bf16 ? int4_x : nullptr, fixed_x, acc, thread_area, pool);
    }
    if (bf16_chunks) {
      return bf16_chunk_rows(job, m, x16, chunk_blocks, reinterpret_cast<std::uint16_t*>(a_packed),
                             thread_area, pool);
    }
    if (bf16) return bf16_rows(job, m, x16, acc, ld_out, thread_area, per_thread, pool);
    if (!gemm) return few_rows(job, m, acc, ld_out, thread_area, per_thread, pool);
    many_rows(job, m, blocks, a_packed, thread_area, pool);
  }
};

}  // namespace

void register_quantized_linear(std::vector<Implementation>& out) {
  out.push_back({"quantize_weight", DeviceType::kCpu, 0, "native", make_quantize_weight});
  out.push_back({"pack_quantized_codes", DeviceType::kCpu, 0, "native", make_pack_quantized_codes});
  out.push_back({"linear_quantized", DeviceType::kCpu, 0, "native",
                 [](const Problem&) { return std::make_unique<LinearQuantizedCpu>(); }});
}

}  // namespace tileops::ops::cpu
