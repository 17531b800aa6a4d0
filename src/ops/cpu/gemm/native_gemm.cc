// The native engine: BLIS/GotoBLAS blocking. For each panel of nc columns, all of K is packed
// once (converted to float32, in blocks of kc, shared by all threads); then threads take blocks
// of mc rows (× a share of the columns when rows are few) and walk K: pack the A block, run the
// register-tiled micro-kernel into the block's float32 accumulator (which stays in L2 across K),
// and finally apply alpha, beta and bias and round to C's dtype. A float32 C with C = A·B (+ bias)
// takes the last K block's whole tiles straight from the micro-kernel's registers instead.
#include <algorithm>
#include <cstring>

#include "src/ops/cpu/gemm/blocking.h"
#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/checked_size.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// A B strip (kc × nr floats) is reused by every A strip of a row block from L2; an A block
// (mc × kc) and its accumulator (mc × nc) stay in L2. A packed panel (K × nc) is at most
// kPanelFloats: it is read from L3 once per row block.
constexpr std::int64_t kMaxNc = 1024;
constexpr std::int64_t kPanelFloats = std::int64_t{2} << 20;

// K blocks and row blocks by the micro-kernel's width (bench/results/cpu-tuning.md). K blocks of
// 512 send the accumulator tiles to L2 half as often as 256 and halve the micro-kernel's calls.
// AVX-512's 8 × 48 tiles and AVX2's 4 × 24 ones both take them (the B strip, 48 KiB on AVX2,
// then leaves L1 for L2); AVX2 halves its row blocks so that its accumulator (96 × 1024 floats),
// A block and B strips fit the 1 MiB L2 together. Narrower vectors keep the blocks they were
// tuned with.
struct Blocking {
  std::int64_t max_kc, max_mc;
};
Blocking blocking_for(std::int64_t nr) {
  if (nr >= 48) return {512, 192};
  if (nr >= 24) return {512, 96};
  return {256, 192};
}
constexpr std::int64_t kMaxNr = 64;  // gemm_nr() on every target (48 on AVX-512)
// bfloat16 on AMX with a linear's weight: up to this many rows the weight is read in place
// (amx_linear_gemm); beyond, packing it pays (bench/results/cpu-tuning.md).
constexpr std::int64_t kAmxLinearMaxRows = 512;
// Up to this many rows with B's columns contiguous (a linear's weight), the decode path runs over
// chunks of at most 16 rows, each streaming the weight again, rather than packing it once: the
// bfloat16 GEMM (VDPBF16PS) overtakes it sooner (bench/results/cpu-tuning.md).
constexpr std::int64_t kChunkedDecodeMaxRowsBf16 = 48;
constexpr std::int64_t kChunkedDecodeMaxRows = 64;

// Requests `count` contiguous float32 elements from each of `n` runs, `stride` elements apart,
// into L2. The packs read runs of kc floats (1-2 KiB) of rows far apart, too short for the
// hardware prefetchers to follow: requesting the next strip's runs while one strip is
// transposed took about a fifth off their time (bench/results/cpu-tuning.md).
void prefetch_runs(const float* first, std::int64_t n, std::int64_t stride, std::int64_t count) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float* run = first + i * stride;
    for (std::int64_t j = 0; j < count; j += 16) __builtin_prefetch(run + j, 0, 2);
    __builtin_prefetch(run + count - 1, 0, 2);
  }
}

// Rows [i0, i0 + rows) × K [p0, p0 + kc) of A as strips of kGemmMr rows, zero padded.
void pack_a(const MatrixRef& a, std::int64_t i0, std::int64_t rows, std::int64_t p0,
            std::int64_t kc, float* out, float* tmp) {
  for (std::int64_t s = 0; s < rows; s += kGemmMr) {
    float* strip = out + (s / kGemmMr) * kc * kGemmMr;
    const std::int64_t live = std::min(kGemmMr, rows - s);
    if (a.row_stride == 1 && live == kGemmMr) {  // column-major A: a strip row is contiguous
      for (std::int64_t p = 0; p < kc; ++p) {
        load_f32(element(a, i0 + s, p0 + p), a.dtype, 1, kGemmMr, strip + p * kGemmMr);
      }
      continue;
    }
    if (a.dtype == DataType::kFloat32 && a.col_stride == 1 && live == kGemmMr) {
      // Row-major float32: transpose the rows straight into the strip (half the time of a copy
      // to `tmp` and a scatter).
      if (s + kGemmMr < rows) {
        prefetch_runs(static_cast<const float*>(element(a, i0 + s + kGemmMr, p0)),
                      std::min(kGemmMr, rows - s - kGemmMr), a.row_stride, kc);
      }
      const float* row_ptrs[kGemmMr];
      for (std::int64_t r = 0; r < kGemmMr; ++r) {
        row_ptrs[r] = static_cast<const float*>(element(a, i0 + s + r, p0));
      }
      gemm_transpose_rows(row_ptrs, kGemmMr, kc, strip, kGemmMr);
      continue;
    }
    for (std::int64_t r = 0; r < kGemmMr; ++r) {
      if (r < live) {
        load_f32(element(a, i0 + s + r, p0), a.dtype, a.col_stride, kc, tmp);
        for (std::int64_t p = 0; p < kc; ++p) strip[p * kGemmMr + r] = tmp[p];
      } else {
        for (std::int64_t p = 0; p < kc; ++p) strip[p * kGemmMr + r] = 0.0f;
      }
    }
  }
}

// Strips [t0, t1) of nr columns from column j0, K [p0, p0 + kc) of B, zero padded past n.
void pack_b(const MatrixRef& b, std::int64_t n, std::int64_t j0, std::int64_t t0, std::int64_t t1,
            std::int64_t p0, std::int64_t kc, std::int64_t nr, float* out, float* tmp) {
  for (std::int64_t t = t0; t < t1; ++t) {
    float* strip = out + t * kc * nr;
    const std::int64_t j = j0 + t * nr;
    const std::int64_t live = std::min(nr, n - j);
    if (live < nr) std::fill(strip, strip + kc * nr, 0.0f);
    if (b.col_stride == 1) {  // row-major B: each packed row is a contiguous run
      for (std::int64_t p = 0; p < kc; ++p) {
        load_f32(element(b, p0 + p, j), b.dtype, 1, live, strip + p * nr);
      }
      continue;
    }
    if (b.dtype == DataType::kFloat32 && b.row_stride == 1) {  // e.g. linear's float32 weight
      const float* cols[kMaxNr];
      for (std::int64_t c = 0; c < live; ++c)
        cols[c] = static_cast<const float*>(element(b, p0, j + c));
      if (t + 1 < t1 && j + nr < n) {
        prefetch_runs(static_cast<const float*>(element(b, p0, j + nr)), std::min(nr, n - j - nr),
                      b.col_stride, kc);
      }
      gemm_transpose_rows(cols, live, kc, strip, nr);
      continue;
    }
    for (std::int64_t c = 0; c < live; ++c) {  // e.g. linear's weight: columns run along K
      load_f32(element(b, p0, j + c), b.dtype, b.row_stride, kc, tmp);
      for (std::int64_t p = 0; p < kc; ++p) strip[p * nr + c] = tmp[p];
    }
  }
}

// decode_gemm over chunks of 16 rows and the rest (17 rows as 16 + 1 ran 5-10% faster than 9 + 8:
// one row streams the weight at the copy bandwidth, where 9 cost nearly what 16 do).
void chunked_decode_gemm(const GemmCall& call, const Context& ctx) {
  for (std::int64_t i0 = 0; i0 < call.m; i0 += kDecodeMaxRows) {
    GemmCall part = call;
    part.m = std::min(kDecodeMaxRows, call.m - i0);
    part.a.data = element(call.a, i0, 0);
    part.c.data = element(call.c, i0, 0);
    decode_gemm(part, ctx);
  }
}

}  // namespace

void native_gemm(const GemmCall& call, const Context& ctx) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  if (m == 0 || n == 0) return;
  if (m <= kDecodeMaxRows && call.b.row_stride == 1 && k > 0) return decode_gemm(call, ctx);
  const bool bf16 = call.a.dtype == DataType::kBFloat16 && call.b.dtype == DataType::kBFloat16;
  // (AMX reads such a weight in place for all the rows instead.)
  const std::int64_t chunked_max = bf16 ? kChunkedDecodeMaxRowsBf16 : kChunkedDecodeMaxRows;
  if (m <= chunked_max && call.b.row_stride == 1 && k > 0 && !(bf16 && amx_bf16_enabled())) {
    return chunked_decode_gemm(call, ctx);
  }
  if (bf16 && k > 0) {
    if (amx_bf16_enabled()) {
      if (call.b.row_stride == 1 && m <= kAmxLinearMaxRows) return amx_linear_gemm(call, ctx);
      return packed_bf16_gemm(call, ctx, Bf16Unit::kAmx);
    }
    if (dpbf16_enabled()) return packed_bf16_gemm(call, ctx, Bf16Unit::kDpbf16);
  }

  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const std::int64_t nr = gemm_nr();
  const Blocking blocking = blocking_for(nr);
  const std::int64_t k_blocks = std::max<std::int64_t>(1, ceil_div(k, blocking.max_kc));
  const std::int64_t kc = std::max<std::int64_t>(1, ceil_div(k, k_blocks));
  // Column panels: all of K × nc packed at once, about kPanelFloats, of whole strips, and as
  // few and even as that allows: each panel packs all of A again, and a narrow last panel (32
  // columns of 2048 with panels of 1008) runs mostly padding.
  const std::int64_t nc_limit = std::max(nr, std::min(kMaxNc, kPanelFloats / std::max(k, nr)));
  const std::int64_t nc = round_up(ceil_div(n, ceil_div(n, nc_limit)), nr);
  const RowBlocks row_plan(m, threads, blocking.max_mc, kGemmMr);
  const std::int64_t mc = row_plan.mc;

  const std::int64_t nc_pad = round_up(nc, nr);
  const std::int64_t tmp_len = std::max(kc, nc_pad);
  // Per thread: the packed A block, its float32 accumulator, a row of conversions, 2 epilogue rows.
  const std::int64_t per_thread = round_up(mc * kc + mc * nc_pad + tmp_len + 2 * nc_pad, 16);
  // A broadcast K (stride 0) can be as large as int64 allows: the panel's size is checked.
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{round_up(n, 16)}, {k_blocks, kc, nc_pad}, {threads, per_thread}, {16}},
                      sizeof(float), "gemm: argument 'a': its workspace"));
  const std::int64_t b_floats = k_blocks * kc * nc_pad;
  float* bias = lease.as<float>();
  float* b_pack = bias + round_up(n, 16);
  float* thread_area = b_pack + b_floats;
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  const float* bias_f32 = call.bias != nullptr ? bias : nullptr;

  if (k == 0) {  // C = beta·C + bias
    float* zeros = thread_area;
    std::fill(zeros, zeros + nc_pad, 0.0f);
    for (std::int64_t j = 0; j < n; j += nc) {
      store_gemm_rows(call, zeros, 0, 0, m, j, std::min(nc, n - j), bias_f32, zeros + nc_pad);
    }
    return;
  }

  // C written straight from the micro-kernel's registers: float32, unit column stride, C = A·B
  // (+ bias).
  const bool direct_c = call.c.dtype == DataType::kFloat32 && call.c.col_stride == 1 &&
                        call.alpha == 1.0f && call.beta == 0.0f;
  for (std::int64_t jc = 0; jc < n; jc += nc) {
    const std::int64_t cols = std::min(nc, n - jc);
    const std::int64_t n_strips = ceil_div(cols, nr);
    // Tasks [begin, end) of (K block, strip) pairs of the K × cols panel; block kb starts at
    // b_pack + kb·kc·nc_pad.
    auto pack_panel = [&](int chunk, std::int64_t begin, std::int64_t end) {
      float* tmp = thread_area + chunk * per_thread + mc * kc + mc * nc_pad;
      for_each_panel_run(begin, end, n_strips,
                         [&](std::int64_t kb, std::int64_t t0, std::int64_t t1) {
                           pack_b(call.b, n, jc, t0, t1, kb * kc, std::min(kc, k - kb * kc), nr,
                                  b_pack + kb * kc * nc_pad, tmp);
                         });
    };
    // Each task: one row block (× a share of the strips) over all of K.
    auto row_blocks = [&](int chunk, std::int64_t begin, std::int64_t end) {
      float* a_pack = thread_area + chunk * per_thread;
      float* acc = a_pack + mc * kc;
      float* tmp = acc + mc * nc_pad;
      float* scratch = tmp + tmp_len;
      for (std::int64_t task = begin; task < end; ++task) {
        const auto [i0, rows, t0, t1] = row_plan.task(task, m, n_strips);
        if (t0 == t1) continue;
        const std::int64_t j0 = jc + t0 * nr, task_cols = std::min(t1 * nr, cols) - t0 * nr;
        // Whole tiles of a plain float32 C are written by the last K block itself.
        GemmDirectOut out{nullptr, 0, nullptr, 0, 0};
        if (direct_c) {
          out = {static_cast<float*>(mutable_element(call.c, i0, j0)), call.c.row_stride,
                 bias_f32 != nullptr ? bias_f32 + j0 : nullptr, rows / kGemmMr, task_cols / nr};
        }
        for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
          const std::int64_t p0 = kb * kc;
          const std::int64_t kcur = std::min(kc, k - p0);
          pack_a(call.a, i0, rows, p0, kcur, a_pack, tmp);
          gemm_macro_kernel(a_pack, ceil_div(rows, kGemmMr),
                            b_pack + kb * kc * nc_pad + t0 * kcur * nr, t1 - t0, kcur, acc, nc_pad,
                            kb > 0, direct_c && kb + 1 == k_blocks ? &out : nullptr);
        }
        // The rest (all of it without `direct_c`): a partial last A strip, a partial last B strip.
        const std::int64_t done_rows = out.full_m_strips * kGemmMr;
        const std::int64_t done_cols = out.full_n_strips * nr;
        if (done_cols > 0) {
          store_gemm_rows(call, acc + done_rows * nc_pad, nc_pad, i0 + done_rows, i0 + rows, j0,
                          task_cols, bias_f32, scratch);
        }
        store_gemm_rows(call, acc + done_cols, nc_pad, i0, i0 + (done_cols > 0 ? done_rows : rows),
                        j0 + done_cols, task_cols - done_cols, bias_f32, scratch);
      }
    };
    pool.parallel_range(k_blocks * n_strips, 2, pack_panel);
    // Row blocks claimed one at a time: a thread slowed down (a shared machine) takes fewer.
    pool.parallel_claim(row_plan.tasks(),
                        [&](int chunk, std::int64_t t) { row_blocks(chunk, t, t + 1); });
  }
}

}  // namespace tileops::ops::cpu
