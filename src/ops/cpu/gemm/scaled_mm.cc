// scaled_mm on CPU. The float8 codes are decoded in registers (simd/fp8-inl.h) while they are
// read or packed, never into a full-size copy of a or b. Up to 16 rows of a (decode), b's columns
// are streamed once against a's rows held as float32 (gemm_dot_rows): up to 2 rows the dot kernel
// reads the codes themselves, more rows decode 12 columns at a time into a float32 panel; with
// b's columns contiguous on AVX512-BF16, a's rows are bfloat16 instead and the codes become
// bfloat16 by table lookup for VDPBF16PS (dpbf16_fp8_kernels.h; M = 1-16 ran 1.9-3.6x). More
// rows take the packed blocking of bf16_gemm.cc on AVX512-BF16 (float8 values are bfloat16
// values: packed exactly, multiplied by dpbf16_block) and of native_gemm.cc elsewhere (packed as
// float32 for the micro-kernel). Per tensor/token/channel scales are the epilogue's
// (scale_a[i]·scale_b[j] times the float32 sum); block scales apply per 128-element K block: as
// the operands are decoded to float32 (a's row i by scale_a[i, kb], b's column j by
// scale_b[kb, j/128]), or, for bfloat16, to each K block's product as it is accumulated.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

#include "src/ops/contracts/scaled_mm.decl.h"
#include "src/ops/cpu/gemm/blocking.h"
#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/dpbf16_fp8_kernels.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/cpu/simd/fp8_kernels.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/scaled_mm.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr const OpDecl& kDecl = decls::scaled_mm;
constexpr std::string_view kWhat = "scaled_mm: argument 'a': its workspace";
constexpr std::int64_t kBlock = kScaledMmBlock;
// The packed path's blocking, as native_gemm.cc's on AVX-512 (bench/results/cpu-tuning.md).
constexpr std::int64_t kMaxKc = 512;
constexpr std::int64_t kMaxNc = 1024;
constexpr std::int64_t kPanelFloats = std::int64_t{2} << 20;
constexpr std::int64_t kMcMax = 192;
// Rows of a that the streaming path takes (gemm_dot_rows' limit), and b's columns it decodes per
// panel: whole groups of the dot kernel's 6 (AVX-512) or 3 (AVX2) rows, 12 of them doubled for
// one row of a.
constexpr std::int64_t kStreamRows = 16;
constexpr std::int64_t kStreamPanel = 12;
// Up to this many rows the dot kernel decodes b's codes in registers; for
// more, the decoding repeated for every 4 rows of a costs more than a float32 panel written once
// (M = 16: 0.10 against 0.19 of the bfloat16 linear's speed, bench/results/catalog-matmul.md).
constexpr std::int64_t kCodeRows = 2;
// On VDPBF16PS, the codes are looked up as they are read up to this many rows (the kernel's
// passes take 4 rows of a, each decoding again), into a bfloat16 panel beyond.
constexpr std::int64_t kLookupRows = 4;

// The bfloat16 path (AVX512-BF16): bf16_gemm.cc's blocking; float8 values are bfloat16 values,
// so the codes are packed as bfloat16 exactly and multiplied two pairs per lane (VDPBF16PS).
constexpr std::int64_t kBf16Kc = 2048;
constexpr std::int64_t kBf16PanelElements = std::int64_t{4} << 20;

struct ScaledProduct {
  std::int64_t m = 0, n = 0, k = 0;
  MatrixRef a, b, c;  // a, b: float8 codes; c: out
  DataType kind = DataType::kFloat8E4M3FN;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  bool block = false;
  std::int64_t a_step = 0, b_step = 0;  // per-token / per-channel: 1; per tensor: 0
  std::int64_t k_blocks = 0, n_blocks = 0;
  // Block scales: element strides of scale_a [M, k_blocks] and scale_b [k_blocks, n_blocks].
  std::int64_t sa_row = 0, sa_col = 0, sb_row = 0, sb_col = 0;
  const void* bias = nullptr;
  DataType bias_dtype = DataType::kFloat32;
  std::int64_t bias_stride = 1;

  const std::uint8_t* a_row(std::int64_t i) const {
    return static_cast<const std::uint8_t*>(a.data) + i * a.row_stride;
  }
  const std::uint8_t* b_col(std::int64_t j) const {
    return static_cast<const std::uint8_t*>(b.data) + j * b.col_stride;
  }
  // K [p0, p0 + len) of a's row i / b's column j as float32, block scales applied.
  void decode_a(std::int64_t i, std::int64_t p0, std::int64_t len, float* dst) const {
    decode(a_row(i), a.col_stride, p0, len, dst,
           [&](std::int64_t kb) { return scale_a[i * sa_row + kb * sa_col]; });
  }
  void decode_b(std::int64_t j, std::int64_t p0, std::int64_t len, float* dst) const {
    decode(b_col(j), b.row_stride, p0, len, dst,
           [&](std::int64_t kb) { return scale_b[kb * sb_row + j / kBlock * sb_col]; });
  }

  template <class Scale>
  void decode(const std::uint8_t* base, std::int64_t stride, std::int64_t p0, std::int64_t len,
              float* dst, Scale&& scale) const {
    if (!block) return fp8_to_f32(base + p0 * stride, stride, len, kind, 1.0f, dst);
    for (std::int64_t p = p0; p < p0 + len;) {
      const std::int64_t kb = p / kBlock;
      const std::int64_t end = std::min(p0 + len, (kb + 1) * kBlock);
      fp8_to_f32(base + p * stride, stride, end - p, kind, scale(kb), dst + (p - p0));
      p = end;
    }
  }

  // Rows [i0, i1) × columns [j0, j0 + cols) of out from the float32 sums acc (row i at
  // acc + (i - i0)·ld_acc): scale_a[i]·scale_b[j]·acc (block scales: acc) + bias, rounded once.
  void store(const float* acc, std::int64_t ld_acc, std::int64_t i0, std::int64_t i1,
             std::int64_t j0, std::int64_t cols, const float* bias32, float* scratch) const {
    const bool direct = c.dtype == DataType::kFloat32 && c.col_stride == 1;
    for (std::int64_t i = i0; i < i1; ++i) {
      void* dst = mutable_element(c, i, j0);
      float* row = direct ? static_cast<float*>(dst) : scratch;
      const float* sums = acc + (i - i0) * ld_acc;
      if (block) {
        for (std::int64_t j = 0; j < cols; ++j) row[j] = sums[j];
      } else {
        const float sa = scale_a[i * a_step];
        const float* sb = scale_b + j0 * b_step;
        for (std::int64_t j = 0; j < cols; ++j) row[j] = (sa * sb[j * b_step]) * sums[j];
      }
      if (bias32 != nullptr) {
        for (std::int64_t j = 0; j < cols; ++j) row[j] += bias32[j0 + j];
      }
      if (!direct) store_f32(row, dst, c.dtype, c.col_stride, cols);
    }
  }
};

// Rows [i0, i0 + rows) × K [p0, p0 + kc) of a as strips of kGemmMr rows, zero padded; tmp holds
// kGemmMr·kc floats.
void pack_a(const ScaledProduct& s, std::int64_t i0, std::int64_t rows, std::int64_t p0,
            std::int64_t kc, float* out, float* tmp) {
  const float* lines[kGemmMr];
  for (std::int64_t r0 = 0; r0 < rows; r0 += kGemmMr) {
    for (std::int64_t r = 0; r < kGemmMr; ++r) {
      float* line = tmp + r * kc;
      if (r0 + r < rows) {
        s.decode_a(i0 + r0 + r, p0, kc, line);
      } else {
        std::fill(line, line + kc, 0.0f);
      }
      lines[r] = line;
    }
    gemm_transpose_rows(lines, kGemmMr, kc, out + (r0 / kGemmMr) * kc * kGemmMr, kGemmMr);
  }
}

// Strips [t0, t1) of nr columns from column j0, K [p0, p0 + kc) of b, zero padded past n; tmp
// holds nr·kc floats.
void pack_b(const ScaledProduct& s, std::int64_t j0, std::int64_t t0, std::int64_t t1,
            std::int64_t p0, std::int64_t kc, std::int64_t nr, float* out, float* tmp) {
  const float* lines[64];
  for (std::int64_t t = t0; t < t1; ++t) {
    float* strip = out + t * kc * nr;
    const std::int64_t j = j0 + t * nr;
    const std::int64_t live = std::min(nr, s.n - j);
    if (live < nr) std::fill(strip, strip + kc * nr, 0.0f);
    for (std::int64_t c = 0; c < live; ++c) {
      s.decode_b(j + c, p0, kc, tmp + c * kc);
      lines[c] = tmp + c * kc;
    }
    gemm_transpose_rows(lines, live, kc, strip, nr);
  }
}

// Up to kStreamRows rows: b's columns streamed once against a's rows decoded to float32 (block
// scales applied). Up to kCodeRows rows, columns contiguous along K (vLLM's b) are read as codes
// by the dot kernel, which decodes them in registers (with block scales per 128-element K block,
// each block's sums added times its scale_b). Otherwise kStreamPanel columns at a time are
// decoded into a float32 panel first (block scales applied).
// Columns [j_begin, j_end) of the streamed product into acc (m × ld_out) on VDPBF16PS, a's rows
// as x16 (bfloat16, unscaled, ld16 apart). Up to kLookupRows rows the dot kernel decodes the
// codes as it reads them; more decode kStreamPanel columns at a time into a bfloat16 panel for
// dpbf16_dot_rows. Block scales: each 128-element K block's sums (`sums`, m × kStreamPanel)
// times scale_a[i, kb]·scale_b[kb, j / 128]. panel: kStreamPanel·ld16 bfloat16.
void lookup_product(const ScaledProduct& s, const std::uint16_t* x16, std::int64_t ld16,
                    std::int64_t j_begin, std::int64_t j_end, std::uint16_t* panel, float* sums,
                    float* acc, std::int64_t ld_out) {
  const std::int64_t m = s.m, k = s.k;
  const bool in_place = m <= kLookupRows;
  if (in_place && !s.block) {
    dpbf16_fp8_dot_rows(x16, ld16, m, s.b_col(j_begin), s.b.col_stride, s.kind, j_end - j_begin, k,
                        acc + j_begin, ld_out);
    return;
  }
  for (std::int64_t j0 = j_begin; j0 < j_end; j0 += kStreamPanel) {
    const std::int64_t cols = std::min(kStreamPanel, j_end - j0);
    if (!in_place) {
      for (std::int64_t c = 0; c < cols; ++c) {
        dpbf16_fp8_to_bf16(s.b_col(j0 + c), k, s.kind, panel + c * ld16);
      }
    }
    // [p0, p0 + len) of the columns, into out (m rows ld_o apart).
    const auto product = [&](std::int64_t p0, std::int64_t len, float* out, std::int64_t ld_o) {
      if (in_place) {
        dpbf16_fp8_dot_rows(x16 + p0, ld16, m, s.b_col(j0) + p0, s.b.col_stride, s.kind, cols, len,
                            out, ld_o);
      } else {
        dpbf16_dot_rows(x16 + p0, ld16, m, panel + p0, ld16, cols, len, out, ld_o);
      }
    };
    if (!s.block) {
      product(0, k, acc + j0, ld_out);
      continue;
    }
    for (std::int64_t i = 0; i < m; ++i) std::fill_n(acc + i * ld_out + j0, cols, 0.0f);
    for (std::int64_t kb = 0; kb < s.k_blocks; ++kb) {
      const std::int64_t p0 = kb * kBlock;
      product(p0, std::min(kBlock, k - p0), sums, kStreamPanel);
      for (std::int64_t i = 0; i < m; ++i) {
        const float sa = s.scale_a[i * s.sa_row + kb * s.sa_col];
        for (std::int64_t c = 0; c < cols; ++c) {
          const float sb = s.scale_b[kb * s.sb_row + (j0 + c) / kBlock * s.sb_col];
          acc[i * ld_out + j0 + c] += sa * sb * sums[i * kStreamPanel + c];
        }
      }
    }
  }
}

void streamed_product(const ScaledProduct& s, const float* bias32, const Context& ctx) {
  const std::int64_t m = s.m, n = s.n, k = s.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const std::int64_t ld_x = round_up(k, 16) + 16;  // off multiples of 4 KiB
  const std::int64_t ld_out = round_up(n, 16);
  // b's codes as bfloat16 by table lookup for VDPBF16PS (dpbf16_fp8_kernels.h) against a as
  // bfloat16 (exact): any M up to kStreamRows.
  const bool lookup = s.b.row_stride == 1 && dpbf16_enabled();
  const bool codes = s.b.row_stride == 1 && m <= kCodeRows && !lookup;
  const std::int64_t ld16 = dpbf16_fp8_ld_x(k);
  WorkspacePool::Lease lease =
      ctx.workspace().acquire(kCpu, ctx.stream, 0,
                              workspace_bytes({{m, ld_x},
                                               {m, ld_out},
                                               {threads, kStreamPanel + 1, ld_x},
                                               {threads, ld_out},
                                               {m, ld16 / 2 + 16}},
                                              sizeof(float), kWhat));
  float* x = lease.as<float>();
  float* acc = x + m * ld_x;
  float* panels = acc + m * ld_out;
  float* scratch = panels + threads * (kStreamPanel + 1) * ld_x;
  auto* x16 = reinterpret_cast<std::uint16_t*>(scratch + threads * ld_out);
  for (std::int64_t i = 0; i < m; ++i) {
    if (!lookup) {
      s.decode_a(i, 0, k, x + i * ld_x);
      continue;
    }
    // Unscaled: block scales multiply each block's sums instead (a float8 value times a scale
    // is no longer a bfloat16 value).
    fp8_to_f32(s.a_row(i), s.a.col_stride, k, s.kind, 1.0f, x + i * ld_x);
    store_f32(x + i * ld_x, x16 + i * ld16, DataType::kBFloat16, 1, k);  // exact
    std::fill(x16 + i * ld16 + k, x16 + (i + 1) * ld16, std::uint16_t{0});
  }
  const std::int64_t groups = ceil_div(n, kStreamPanel);
  pool.parallel_range(groups, 4, [&](int chunk, std::int64_t g0, std::int64_t g1) {
    float* panel = panels + chunk * (kStreamPanel + 1) * ld_x;
    const std::int64_t j_begin = g0 * kStreamPanel, j_end = std::min(n, g1 * kStreamPanel);
    if (lookup) {
      // The panel's bfloat16 first (kStreamPanel·ld16 of them: 6·ld16 floats), then the sums.
      lookup_product(s, x16, ld16, j_begin, j_end, reinterpret_cast<std::uint16_t*>(panel),
                     panel + kStreamPanel * ld16 / 2, acc, ld_out);
    } else if (codes && !s.block) {
      gemm_dot_rows(x, ld_x, m, s.b_col(j_begin), s.kind, s.b.col_stride, j_end - j_begin, k,
                    acc + j_begin, ld_out);
    }
    for (std::int64_t j0 = j_begin; j0 < j_end && !lookup && !(codes && !s.block);
         j0 += kStreamPanel) {
      const std::int64_t cols = std::min(kStreamPanel, n - j0);
      if (!codes) {
        for (std::int64_t c = 0; c < cols; ++c) s.decode_b(j0 + c, 0, k, panel + c * ld_x);
        gemm_dot_rows(x, ld_x, m, panel, DataType::kFloat32, ld_x, cols, k, acc + j0, ld_out);
        continue;
      }
      // Block scales over codes: the block's sums into `panel` (m × cols), then scaled into acc.
      for (std::int64_t i = 0; i < m; ++i) std::fill_n(acc + i * ld_out + j0, cols, 0.0f);
      for (std::int64_t kb = 0; kb < s.k_blocks; ++kb) {
        const std::int64_t p0 = kb * kBlock, len = std::min(kBlock, k - p0);
        gemm_dot_rows(x + p0, ld_x, m, s.b_col(j0) + p0, s.kind, s.b.col_stride, cols, len, panel,
                      kStreamPanel);
        for (std::int64_t c = 0; c < cols; ++c) {
          const float sb = s.scale_b[kb * s.sb_row + (j0 + c) / kBlock * s.sb_col];
          for (std::int64_t i = 0; i < m; ++i)
            acc[i * ld_out + j0 + c] += sb * panel[i * kStreamPanel + c];
        }
      }
    }
    s.store(acc + j_begin, ld_out, 0, m, j_begin, j_end - j_begin, bias32,
            scratch + chunk * ld_out);
  });
}

// More rows: native_gemm's blocking with the codes decoded while packing.
void packed_product(const ScaledProduct& s, const float* bias32, const Context& ctx) {
  const std::int64_t m = s.m, n = s.n, k = s.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const std::int64_t nr = gemm_nr();
  const std::int64_t k_blocks = ceil_div(k, kMaxKc);
  const std::int64_t kc = ceil_div(k, k_blocks);
  const std::int64_t nc_limit = std::max(nr, std::min(kMaxNc, kPanelFloats / std::max(k, nr)));
  const std::int64_t nc = round_up(ceil_div(n, ceil_div(n, nc_limit)), nr);
  const RowBlocks row_plan(m, threads, kMcMax, kGemmMr);
  const std::int64_t mc = row_plan.mc;
  const std::int64_t tmp_len = std::max(kGemmMr, nr) * kc;
  // Per thread: the packed A block, its float32 accumulator, decoded lines, an epilogue row.
  const std::int64_t per_thread = round_up(mc * kc + mc * nc + tmp_len + nc, 16);
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{k_blocks, kc, nc}, {threads, per_thread}, {16}}, sizeof(float), kWhat));
  float* b_pack = lease.as<float>();
  float* thread_area = b_pack + round_up(k_blocks * kc * nc, 16);
  for (std::int64_t jc = 0; jc < n; jc += nc) {
    const std::int64_t cols = std::min(nc, n - jc);
    const std::int64_t n_strips = ceil_div(cols, nr);
    auto pack_panel = [&](int chunk, std::int64_t begin, std::int64_t end) {
      float* tmp = thread_area + chunk * per_thread + mc * kc + mc * nc;
      for_each_panel_run(begin, end, n_strips,
                         [&](std::int64_t kb, std::int64_t t0, std::int64_t t1) {
                           pack_b(s, jc, t0, t1, kb * kc, std::min(kc, k - kb * kc), nr,
                                  b_pack + kb * kc * nc, tmp);
                         });
    };
    auto row_block = [&](int chunk, std::int64_t task) {
      float* a_pack = thread_area + chunk * per_thread;
      float* acc = a_pack + mc * kc;
      float* tmp = acc + mc * nc;
      float* scratch = tmp + tmp_len;
      const auto [i0, rows, t0, t1] = row_plan.task(task, m, n_strips);
      if (t0 == t1) return;
      for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
        const std::int64_t p0 = kb * kc;
        const std::int64_t kcur = std::min(kc, k - p0);
        pack_a(s, i0, rows, p0, kcur, a_pack, tmp);
        gemm_macro_kernel(a_pack, ceil_div(rows, kGemmMr), b_pack + kb * kc * nc + t0 * kcur * nr,
                          t1 - t0, kcur, acc, nc, kb > 0);
      }
      s.store(acc, nc, i0, i0 + rows, jc + t0 * nr, std::min(t1 * nr, cols) - t0 * nr, bias32,
              scratch);
    };
    pool.parallel_range(k_blocks * n_strips, 2, pack_panel);
    pool.parallel_claim(row_plan.tasks(), row_block);
  }
}

// Rows [i0, i0 + rows) × K [p0, p0 + kc) of a as bfloat16 row tiles (amx_kernels.h) of kc_pad
// columns, zero padded to rows_pad rows; line holds kc_pad elements.
void pack_a_bf16(const ScaledProduct& s, std::int64_t i0, std::int64_t rows, std::int64_t rows_pad,
                 std::int64_t p0, std::int64_t kc, std::int64_t kc_pad, std::uint16_t* out,
                 std::uint16_t* line) {
  std::fill(line + kc, line + kc_pad, std::uint16_t{0});
  for (std::int64_t r = 0; r < rows_pad; ++r) {
    std::uint16_t* tile = out + r / kAmxRows * kc_pad * kAmxRows + r % kAmxRows * kAmxK;
    if (r < rows) {
      fp8_to_bf16(s.a_row(i0 + r) + p0 * s.a.col_stride, s.a.col_stride, kc, s.kind, line);
    } else {
      std::fill(line, line + kc, std::uint16_t{0});
    }
    for (std::int64_t q = 0; q < kc_pad; q += kAmxK) {
      std::memcpy(tile + q * kAmxRows, line + q, kAmxK * sizeof(std::uint16_t));
    }
  }
}

// Strips [t0, t1) of kAmxCols columns from column j0, K [p0, p0 + kc) of b, pair-interleaved
// with kc_pad rows: a column's (p, p + 1) pair is one 32-bit word, so each strip is the word
// transpose of its columns' decoded lines (kAmxCols lines of kc_pad elements).
void pack_b_bf16(const ScaledProduct& s, std::int64_t j0, std::int64_t t0, std::int64_t t1,
                 std::int64_t p0, std::int64_t kc, std::int64_t kc_pad, std::uint16_t* out,
                 std::uint16_t* lines) {
  const float* words[kAmxCols];
  for (std::int64_t t = t0; t < t1; ++t) {
    std::uint16_t* strip = out + t * kc_pad * kAmxCols;
    const std::int64_t j = j0 + t * kAmxCols;
    const std::int64_t live = std::min(kAmxCols, s.n - j);
    if (live < kAmxCols) std::fill(strip, strip + kc_pad * kAmxCols, std::uint16_t{0});
    for (std::int64_t c = 0; c < live; ++c) {
      std::uint16_t* line = lines + c * kc_pad;
      fp8_to_bf16(s.b_col(j + c) + p0 * s.b.row_stride, s.b.row_stride, kc, s.kind, line);
      std::fill(line + kc, line + kc_pad, std::uint16_t{0});
      // The words are moved, never computed on: float32 loads and stores keep their bits.
      words[c] = reinterpret_cast<const float*>(line);
    }
    gemm_transpose_rows(words, live, kc_pad / 2, reinterpret_cast<float*>(strip), kAmxCols);
  }
}

// More rows on AVX512-BF16: bf16_gemm.cc's packed_bf16_gemm with the codes decoded to bfloat16
// while packing (bfloat16 cannot carry a scale exactly). Block scales: K blocks of 128, each
// block's product into `part` and added to the accumulator times scale_a[i, kb]·scale_b[kb, j/128].
void bf16_product(const ScaledProduct& s, const float* bias32, const Context& ctx) {
  const std::int64_t m = s.m, n = s.n, k = s.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const std::int64_t k_blocks = ceil_div(k, s.block ? kBlock : kBf16Kc);
  const std::int64_t kc_max = s.block ? kBlock : round_up(ceil_div(k, k_blocks), kAmxK);
  const std::int64_t nc = std::min(
      {round_up(n, kAmxCols), std::int64_t{1024},
       std::max(kAmxCols, kBf16PanelElements / (k_blocks * kc_max) / kAmxCols * kAmxCols)});
  const std::int64_t ld_acc = nc % 256 == 0 ? nc + 16 : nc;  // as bf16_gemm.cc: off L1 sets
  const RowBlocks row_plan(m, threads, kMcMax, 2 * kAmxRows);
  const std::int64_t mc = row_plan.mc;
  // In floats: the packed panel; per thread the A block, its accumulator, the decoded lines of
  // a strip (or one of a) and an epilogue row; block scales: a block's product and a row of
  // column scales.
  const std::int64_t b_floats = round_up(k_blocks * kc_max * nc, 32) / 2;
  const std::int64_t per_thread = round_up(
      mc * kc_max / 2 + mc * ld_acc + kAmxCols * kc_max / 2 + nc + (s.block ? mc * ld_acc + nc : 0),
      16);
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{k_blocks, kc_max, nc}, {threads, per_thread}, {32}}, sizeof(float), kWhat));
  auto* b_pack = lease.as<std::uint16_t>();
  float* thread_area = lease.as<float>() + b_floats;
  for (std::int64_t jc = 0; jc < n; jc += nc) {
    const std::int64_t cols = std::min(nc, n - jc);
    const std::int64_t n_strips = ceil_div(cols, kAmxCols);
    auto pack_panel = [&](int chunk, std::int64_t begin, std::int64_t end) {
      auto* lines = reinterpret_cast<std::uint16_t*>(thread_area + chunk * per_thread +
                                                     mc * kc_max / 2 + mc * ld_acc);
      for_each_panel_run(begin, end, n_strips,
                         [&](std::int64_t kb, std::int64_t t0, std::int64_t t1) {
                           const std::int64_t kcur = std::min(kc_max, k - kb * kc_max);
                           pack_b_bf16(s, jc, t0, t1, kb * kc_max, kcur, round_up(kcur, kAmxK),
                                       b_pack + kb * kc_max * nc, lines);
                         });
    };
    auto row_block = [&](int chunk, std::int64_t task) {
      auto* a_pack = reinterpret_cast<std::uint16_t*>(thread_area + chunk * per_thread);
      float* acc = thread_area + chunk * per_thread + mc * kc_max / 2;
      auto* line = reinterpret_cast<std::uint16_t*>(acc + mc * ld_acc);
      float* scratch = acc + mc * ld_acc + kAmxCols * kc_max / 2;
      const auto [i0, rows, t0, t1] = row_plan.task(task, m, n_strips);
      if (t0 == t1) return;
      const std::int64_t rows_pad = round_up(rows, kAmxRows);
      for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
        const std::int64_t p0 = kb * kc_max;
        const std::int64_t kcur = std::min(kc_max, k - p0);
        const std::int64_t kc_pad = round_up(kcur, kAmxK);
        pack_a_bf16(s, i0, rows, rows_pad, p0, kcur, kc_pad, a_pack, line);
        const std::uint16_t* b_block = b_pack + kb * kc_max * nc + t0 * kc_pad * kAmxCols;
        if (!s.block) {
          dpbf16_block(a_pack, rows_pad, kc_pad, b_block, t1 - t0, acc, ld_acc, kb > 0);
          continue;
        }
        float* part = scratch + nc;
        float* col_scale = part + mc * ld_acc;
        dpbf16_block(a_pack, rows_pad, kc_pad, b_block, t1 - t0, part, ld_acc, false);
        const std::int64_t j0 = jc + t0 * kAmxCols,
                           width = std::min(t1 * kAmxCols, cols) - t0 * kAmxCols;
        for (std::int64_t j = 0; j < width; ++j) {
          col_scale[j] = s.scale_b[kb * s.sb_row + (j0 + j) / kBlock * s.sb_col];
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          const float sa = s.scale_a[(i0 + r) * s.sa_row + kb * s.sa_col];
          float* out = acc + r * ld_acc;
          const float* in = part + r * ld_acc;
          for (std::int64_t j = 0; j < width; ++j) {
            out[j] = (kb > 0 ? out[j] : 0.0f) + (sa * col_scale[j]) * in[j];
          }
        }
      }
      s.store(acc, ld_acc, i0, i0 + rows, jc + t0 * kAmxCols,
              std::min(t1 * kAmxCols, cols) - t0 * kAmxCols, bias32, scratch);
    };
    pool.parallel_range(k_blocks * n_strips, 2, pack_panel);
    pool.parallel_claim(row_plan.tasks(), row_block);
  }
}

class ScaledMmCpu final : public Operator {
 public:
  explicit ScaledMmCpu(bool block) : block_(block) {}

  void run(std::span<const Tensor> t, const Context& ctx) const override {
    const Tensor& a = t[tensor_index(kDecl, "a")];
    const Tensor& b = t[tensor_index(kDecl, "b")];
    const Tensor& scale_a = t[tensor_index(kDecl, "scale_a")];
    const Tensor& scale_b = t[tensor_index(kDecl, "scale_b")];
    const Tensor& bias = t[tensor_index(kDecl, "bias")];
    const Tensor& out = t[tensor_index(kDecl, "out")];
    ScaledProduct s;
    s.m = a.size(0), s.k = a.size(1), s.n = b.size(1);
    if (s.m == 0 || s.n == 0) return;
    s.a = {a.data(), a.dtype(), a.stride(0), a.stride(1)};
    s.b = {b.data(), b.dtype(), b.stride(0), b.stride(1)};
    s.c = {out.data(), out.dtype(), out.stride(0), out.stride(1)};
    s.kind = a.dtype();
    s.scale_a = scale_a.data_as<const float>();
    s.scale_b = scale_b.data_as<const float>();
    s.block = block_;
    s.a_step = scale_a.numel() > 1 ? 1 : 0;
    s.b_step = scale_b.numel() > 1 ? 1 : 0;
    s.k_blocks = ceil_div(s.k, kBlock);
    s.n_blocks = ceil_div(s.n, kBlock);
    if (block_) {
      s.sa_row = scale_a.stride(0), s.sa_col = scale_a.stride(1);
      s.sb_row = scale_b.stride(0), s.sb_col = scale_b.stride(1);
    }

    // The float32 bias; for K = 0 also a row of zero sums and an epilogue row.
    const std::int64_t ld_bias = round_up(s.n, 16);
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 1, workspace_bytes({{3, ld_bias}}, sizeof(float), kWhat));
    float* bias32 = nullptr;
    if (bias.data() != nullptr) {
      bias32 = lease.as<float>();
      load_f32(bias.data(), bias.dtype(), bias.stride(0), s.n, bias32);
    }
    if (s.k == 0) {  // the sums are zero: out = scales · 0 + bias
      float* zeros = lease.as<float>() + ld_bias;
      std::fill(zeros, zeros + ld_bias, 0.0f);
      s.store(zeros, 0, 0, s.m, 0, s.n, bias32, zeros + ld_bias);
      return;
    }
    if (s.m <= kStreamRows) return streamed_product(s, bias32, ctx);
    if (dpbf16_enabled()) return bf16_product(s, bias32, ctx);
    packed_product(s, bias32, ctx);
  }

 private:
  bool block_;
};

}  // namespace

void register_scaled_mm(std::vector<Implementation>& out) {
  out.push_back({"scaled_mm", DeviceType::kCpu, 0, "native", [](const Problem& p) {
                   const double block = p.attributes[derived_attribute_index(kDecl, 0)];
                   return std::make_unique<ScaledMmCpu>(block != 0.0);
                 }});
}

}  // namespace tileops::ops::cpu
