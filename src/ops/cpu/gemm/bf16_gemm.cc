// The native engine's bfloat16 paths on CPUs with AMX (amx_kernels.h) or AVX512-BF16
// (dpbf16_kernels.h).
// packed_bf16_gemm: blocking as in native_gemm.cc with the operands kept bfloat16. For each panel
// of nc columns, all of K is packed once into pair-interleaved 16-column strips (shared by the
// threads); each thread takes row blocks, copies each K block of its rows into zero-padded row
// tiles, multiplies them (AMX tiles or dot-product instructions) into the block's float32
// accumulator (in L2 across K) and finally applies alpha, beta, bias and rounding.
// amx_linear_gemm: Cᵀ = W·Xᵀ with the weight read in place (below).
#include <algorithm>
#include <cstring>
#include <string_view>

#include "src/ops/cpu/gemm/blocking.h"
#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/checked_size.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::string_view kWhat = "gemm: argument 'a': its workspace";

// K block on AMX: a pair of B strips (2 × kc × 64 bytes, 32 KiB) stays in L1 while the A block
// (mc × kc × 2 bytes, at most 96 KiB) and the accumulator tiles come from L2.
constexpr std::int64_t kAmxKc = 256;
// On AVX512-BF16 the register tile holds 8 × 48 results and each K pair costs 24 products: the
// accumulator's trips to L2 and the calls per K block cost more than streaming B triples
// (3 × kc × 64 bytes) from L2 (bench/results/cpu-tuning.md).
constexpr std::int64_t kDpbf16Kc = 2048;
constexpr std::int64_t kMaxNc = 1024;
constexpr std::int64_t kPanelElements = std::int64_t{4} << 20;  // bfloat16: 8 MiB
constexpr std::int64_t kMcMax = 192;
// amx_linear_gemm: K blocks of the X block (kLinearKc × M bfloat16) and groups of weight tiles
// whose transposed results (16·kLinearGroupTiles × M float32) are kept.
constexpr std::int64_t kLinearKc = 1024;
constexpr std::int64_t kLinearGroupTiles = 32;

std::uint16_t bits_at(const MatrixRef& m, std::int64_t row, std::int64_t col) {
  std::uint16_t v;
  std::memcpy(&v, element(m, row, col), sizeof v);
  return v;
}

// Rows [i0, i0 + rows) × K [p0, p0 + kc) of A as row tiles (amx_kernels.h) with kc_pad columns,
// zero padded to rows_pad rows.
void pack_a(const MatrixRef& a, std::int64_t i0, std::int64_t rows, std::int64_t rows_pad,
            std::int64_t p0, std::int64_t kc, std::int64_t kc_pad, std::uint16_t* out) {
  constexpr std::int64_t kStep = kAmxK * kAmxRows;  // elements per K step of a row tile
  for (std::int64_t r = 0; r < rows_pad; ++r) {
    std::uint16_t* dst = out + r / kAmxRows * kc_pad * kAmxRows + r % kAmxRows * kAmxK;
    std::int64_t p = 0;
    if (r < rows && a.col_stride == 1) {
      const auto* src = static_cast<const std::uint16_t*>(element(a, i0 + r, p0));
      for (; p + kAmxK <= kc; p += kAmxK) std::memcpy(dst + p * kAmxRows, src + p, kAmxK * 2);
    }
    for (; p < kc_pad; p += kAmxK) {  // the K tail, padding rows, strided A
      std::uint16_t* step = dst + p / kAmxK * kStep;
      for (std::int64_t q = 0; q < kAmxK; ++q) {
        step[q] = r < rows && p + q < kc ? bits_at(a, i0 + r, p0 + p + q) : std::uint16_t{0};
      }
    }
  }
}

// Strips [t0, t1) of kAmxCols columns from column j0, K [p0, p0 + kc) of B, pair-interleaved
// (amx_kernels.h) with kc_pad rows, zero padded past n and past kc.
void pack_b(const MatrixRef& b, std::int64_t n, std::int64_t j0, std::int64_t t0, std::int64_t t1,
            std::int64_t p0, std::int64_t kc, std::int64_t kc_pad, std::uint16_t* out) {
  for (std::int64_t t = t0; t < t1; ++t) {
    std::uint16_t* strip = out + t * kc_pad * kAmxCols;
    const std::int64_t j = j0 + t * kAmxCols;
    const std::int64_t live = std::min(kAmxCols, n - j);
    const std::int64_t whole_pairs = b.row_stride == 1 ? kc / 2 : 0;
    if (whole_pairs > 0) {  // e.g. linear's weight: each (k, k + 1) pair is one 32-bit word
      const char* cols[kAmxCols];
      for (std::int64_t c = 0; c < live; ++c) {
        cols[c] = static_cast<const char*>(element(b, p0, j + c));
      }
      for (std::int64_t q = 0; q < whole_pairs; ++q) {
        std::uint16_t* row = strip + q * 2 * kAmxCols;
        for (std::int64_t c = 0; c < live; ++c) std::memcpy(row + 2 * c, cols[c] + q * 4, 4);
        std::fill(row + 2 * live, row + 2 * kAmxCols, std::uint16_t{0});
      }
    }
    for (std::int64_t p = 2 * whole_pairs; p < kc_pad; ++p) {
      std::uint16_t* row = strip + p / 2 * 2 * kAmxCols + p % 2;
      for (std::int64_t c = 0; c < kAmxCols; ++c) {
        row[2 * c] = p < kc && c < live ? bits_at(b, p0 + p, j + c) : std::uint16_t{0};
      }
    }
  }
}

}  // namespace

void packed_bf16_gemm(const GemmCall& call, const Context& ctx, Bf16Unit unit) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const auto block = unit == Bf16Unit::kAmx ? &amx_bf16_block : &dpbf16_block;
  const std::int64_t k_blocks =
      std::max<std::int64_t>(1, ceil_div(k, unit == Bf16Unit::kAmx ? kAmxKc : kDpbf16Kc));
  const std::int64_t kc_max = round_up(ceil_div(k, k_blocks), kAmxK);
  const std::int64_t nc =
      std::min({round_up(n, kAmxCols), kMaxNc,
                std::max(kAmxCols, kPanelElements / (k_blocks * kc_max) / kAmxCols * kAmxCols)});
  const std::int64_t nc_pad = round_up(nc, kAmxCols);
  // Accumulator rows of a multiple of 1 KiB get one line more: the 16 rows of a tile 4 KiB apart
  // (1024-column panels) fall into one L1 set. 2048³ on one thread: the accumulator tiles' loads
  // took 23% of the tile kernel's samples, 12% padded.
  const std::int64_t ld_acc = nc_pad % 256 == 0 ? nc_pad + 16 : nc_pad;
  const RowBlocks row_plan(m, threads, kMcMax, 2 * kAmxRows);
  const std::int64_t mc = row_plan.mc;

  // Workspace in floats: bias, the packed panel (bfloat16), per thread the A block (bfloat16),
  // its accumulator and two epilogue rows.
  // A broadcast K (stride 0) can be as large as int64 allows: the panel's size is checked.
  workspace_bytes({{k_blocks, kc_max, nc_pad}, {32}}, sizeof(float), kWhat);
  const std::int64_t b_floats = round_up(k_blocks * kc_max * nc_pad, 32) / 2;
  const std::int64_t per_thread = round_up(mc * kc_max / 2 + mc * ld_acc + 2 * nc_pad, 16);
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{round_up(n, 16)}, {b_floats}, {threads, per_thread}, {16}}, sizeof(float),
                      kWhat));
  float* bias = lease.as<float>();
  auto* b_pack = reinterpret_cast<std::uint16_t*>(bias + round_up(n, 16));
  float* thread_area = bias + round_up(n, 16) + b_floats;
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  const float* bias_f32 = call.bias != nullptr ? bias : nullptr;

  for (std::int64_t jc = 0; jc < n; jc += nc) {
    const std::int64_t cols = std::min(nc, n - jc);
    const std::int64_t n_strips = ceil_div(cols, kAmxCols);
    // Tasks [begin, end) of (K block, strip) pairs; block kb starts at b_pack + kb·kc_max·nc_pad.
    auto pack_panel = [&](int, std::int64_t begin, std::int64_t end) {
      for_each_panel_run(begin, end, n_strips,
                         [&](std::int64_t kb, std::int64_t t0, std::int64_t t1) {
                           const std::int64_t kcur = std::min(kc_max, k - kb * kc_max);
                           pack_b(call.b, n, jc, t0, t1, kb * kc_max, kcur, round_up(kcur, kAmxK),
                                  b_pack + kb * kc_max * nc_pad);
                         });
    };
    // Each task: one row block (× a share of the strips) over all of K.
    auto row_blocks = [&](int chunk, std::int64_t begin, std::int64_t end) {
      auto* a_pack = reinterpret_cast<std::uint16_t*>(thread_area + chunk * per_thread);
      float* acc = thread_area + chunk * per_thread + mc * kc_max / 2;
      float* scratch = acc + mc * ld_acc;
      for (std::int64_t task = begin; task < end; ++task) {
        const auto [i0, rows, t0, t1] = row_plan.task(task, m, n_strips);
        if (t0 == t1) continue;
        const std::int64_t rows_pad = round_up(rows, kAmxRows);
        for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
          const std::int64_t p0 = kb * kc_max;
          const std::int64_t kcur = std::min(kc_max, k - p0);
          const std::int64_t kc_pad = round_up(kcur, kAmxK);
          pack_a(call.a, i0, rows, rows_pad, p0, kcur, kc_pad, a_pack);
          block(a_pack, rows_pad, kc_pad, b_pack + kb * kc_max * nc_pad + t0 * kc_pad * kAmxCols,
                t1 - t0, acc, ld_acc, kb > 0);
        }
        store_gemm_rows(call, acc, ld_acc, i0, i0 + rows, jc + t0 * kAmxCols,
                        std::min(t1 * kAmxCols, cols) - t0 * kAmxCols, bias_f32, scratch);
      }
    };
    pool.parallel_range(k_blocks * n_strips, 2, pack_panel);
    // Row blocks claimed one at a time: a thread slowed down (a shared machine) takes fewer.
    pool.parallel_claim(row_plan.tasks(),
                        [&](int chunk, std::int64_t t) { row_blocks(chunk, t, t + 1); });
  }
}

// C transposed (amx_bf16_rows): the weight's 16-row tiles are read in place as the left operand
// against X's rows packed once as B strips, so every weight byte comes from memory once per group
// and nothing of the weight is packed; per K block the X block stays in L2. The K tail past a
// multiple of 32 and a partial last tile go through small zero-padded copies.
void amx_linear_gemm(const GemmCall& call, const Context& ctx) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const std::int64_t m_pad = round_up(m, kAmxCols);
  const std::int64_t strips = m_pad / kAmxCols;
  const std::int64_t k_main = k / kAmxK * kAmxK;
  const std::int64_t k_pad = round_up(k, kAmxK);
  const std::int64_t tiles = ceil_div(n, kAmxRows);
  const std::int64_t group = std::min(tiles, kLinearGroupTiles);
  const std::int64_t group_rows = group * kAmxRows;
  // Per thread: the weight copy (a partial tile over all K, or the K tails of a group), a group's
  // transposed results, the same as m rows, and 2 epilogue rows.
  // A broadcast K (stride 0) can be as large as int64 allows: the copies' sizes are checked.
  workspace_bytes({{kAmxRows, k_pad},
                   {group_rows, kAmxK},
                   {group_rows, m_pad},
                   {m + 2, group_rows},
                   {k_pad, m_pad},
                   {64}},
                  sizeof(float), kWhat);
  const std::int64_t copy_floats = round_up(kAmxRows * k_pad + group_rows * kAmxK, 32) / 2;
  const std::int64_t per_thread =
      round_up(copy_floats + group_rows * m_pad + (m + 2) * group_rows, 16);
  const std::int64_t xt_floats = round_up(k_pad * m_pad, 32) / 2;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{round_up(n, 16)}, {xt_floats}, {threads, per_thread}, {16}}, sizeof(float),
                      kWhat));
  float* bias = lease.as<float>();
  auto* xt = reinterpret_cast<std::uint16_t*>(bias + round_up(n, 16));
  float* thread_area = bias + round_up(n, 16) + xt_floats;
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  const float* bias_f32 = call.bias != nullptr ? bias : nullptr;

  // K blocks [p0, p0 + kc): kLinearKc at a time up to k_main, then the tail as one padded step.
  // X's block at xt + p0·m_pad holds its strips (each kc rows) back to back.
  const MatrixRef x_t{call.a.data, call.a.dtype, call.a.col_stride, call.a.row_stride};
  auto block_end = [&](std::int64_t p0) {
    return p0 < k_main ? std::min(p0 + kLinearKc, k_main) : k_pad;
  };
  for (std::int64_t p0 = 0; p0 < k_pad; p0 = block_end(p0)) {
    const std::int64_t kc = block_end(p0) - p0;
    pack_b(x_t, m, 0, 0, strips, p0, std::min(kc, k - p0), kc, xt + p0 * m_pad);
  }

  const auto* w = static_cast<const std::uint16_t*>(call.b.data);
  const std::int64_t ld_w = call.b.col_stride;  // weight row j at w + j·ld_w
  const std::int64_t whole_tiles = n / kAmxRows;
  // Rows [j0, j0 + rows) × K [p0, p0 + cols) of the weight into dst (row stride ld, zero padded
  // to whole tiles and ld columns).
  auto copy_rows = [&](std::int64_t j0, std::int64_t rows, std::int64_t p0, std::int64_t cols,
                       std::int64_t ld, std::uint16_t* dst) {
    for (std::int64_t r = 0; r < round_up(rows, kAmxRows); ++r) {
      for (std::int64_t p = 0; p < ld; ++p) {
        dst[r * ld + p] = r < rows && p < cols ? w[(j0 + r) * ld_w + p0 + p] : 0;
      }
    }
  };
  auto run = [&](int chunk, std::int64_t begin, std::int64_t end) {
    auto* copy = reinterpret_cast<std::uint16_t*>(thread_area + chunk * per_thread);
    float* out_t = thread_area + chunk * per_thread + copy_floats;
    float* acc = out_t + group_rows * m_pad;
    float* scratch = acc + m * group_rows;
    for (std::int64_t g0 = begin; g0 < end; g0 += group) {
      const std::int64_t g1 = std::min(end, g0 + group);
      const std::int64_t whole = std::max<std::int64_t>(0, std::min(g1, whole_tiles) - g0);
      const bool partial = g1 > whole_tiles;  // the last tile has fewer than 16 rows
      if (partial) copy_rows(whole_tiles * kAmxRows, n % kAmxRows, 0, k, k_pad, copy);
      for (std::int64_t p0 = 0; p0 < k_pad; p0 = block_end(p0)) {
        const std::int64_t kc = block_end(p0) - p0;
        const std::uint16_t* x_block = xt + p0 * m_pad;
        const bool accumulate = p0 > 0;
        if (whole > 0 && p0 < k_main) {
          amx_bf16_rows(w + g0 * kAmxRows * ld_w + p0, ld_w, whole, kc, x_block, strips, out_t,
                        m_pad, accumulate);
        } else if (whole > 0) {  // K tail of the whole tiles
          std::uint16_t* tails = partial ? copy + kAmxRows * k_pad : copy;
          copy_rows(g0 * kAmxRows, whole * kAmxRows, k_main, k - k_main, kAmxK, tails);
          amx_bf16_rows(tails, kAmxK, whole, kc, x_block, strips, out_t, m_pad, accumulate);
        }
        if (partial) {
          amx_bf16_rows(copy + p0, k_pad, 1, kc, x_block, strips, out_t + whole * kAmxRows * m_pad,
                        m_pad, accumulate);
        }
      }
      const std::int64_t j0 = g0 * kAmxRows;
      const std::int64_t cols = std::min(g1 * kAmxRows, n) - j0;
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < cols; ++j) acc[i * cols + j] = out_t[j * m_pad + i];
      }
      store_gemm_rows(call, acc, cols, 0, m, j0, cols, bias_f32, scratch);
    }
  };
  pool.parallel_range(tiles, 4, run);
}

}  // namespace tileops::ops::cpu
