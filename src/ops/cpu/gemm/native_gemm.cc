// The native engine: BLIS/GotoBLAS blocking. For each block of nc columns and kc of K, the B
// panel is packed once (converted to float32, shared by all threads), then threads take blocks
// of mc rows (× a share of the columns when rows are few), pack their A block and run the
// register-tiled micro-kernel into a float32 accumulator; the last K block applies alpha, beta
// and bias and rounds to C's dtype while the block is still in cache.
#include <algorithm>
#include <cstring>

#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// The B strip (kc × 24 floats on AVX2, 24 KiB) stays in L1 across the A strips of a block; the A
// block (mc × kc, 120 KiB) stays in L2; nc bounds the float32 accumulator per row block.
constexpr std::int64_t kKc = 256;
constexpr std::int64_t kNc = 1024;
constexpr std::int64_t kMcMax = 120;
// Rows per pass: the accumulator is at most kRowPanel × kNc floats (12 MiB); B is repacked once
// per panel, which costs 1/kRowPanel of the arithmetic.
constexpr std::int64_t kRowPanel = 3072;

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
    for (std::int64_t c = 0; c < live; ++c) {  // e.g. linear's weight: columns run along K
      load_f32(element(b, p0, j + c), b.dtype, b.row_stride, kc, tmp);
      for (std::int64_t p = 0; p < kc; ++p) strip[p * nr + c] = tmp[p];
    }
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

}  // namespace

void native_gemm(const GemmCall& call, const Context& ctx) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  if (m == 0 || n == 0) return;
  if (m <= kDecodeMaxRows && call.b.row_stride == 1 && k > 0) return decode_gemm(call, ctx);
  if (m > kRowPanel) {  // bound the float32 accumulator: one row panel at a time
    for (std::int64_t i = 0; i < m; i += kRowPanel) {
      GemmCall panel = call;
      panel.m = std::min(kRowPanel, m - i);
      panel.a.data = element(call.a, i, 0);
      panel.c.data = element(call.c, i, 0);
      native_gemm(panel, ctx);
    }
    return;
  }

  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const std::int64_t nr = gemm_nr();
  const std::int64_t k_blocks = std::max<std::int64_t>(1, ceil_div(k, kKc));
  const std::int64_t kc = std::max<std::int64_t>(1, ceil_div(k, k_blocks));
  const std::int64_t nc = std::min(round_up(n, nr), kNc);
  // Row blocks: a multiple of the thread count, each at most kMcMax rows.
  const std::int64_t m_blocks = round_up(std::max<std::int64_t>(1, ceil_div(m, kMcMax)), threads);
  const std::int64_t mc = round_up(ceil_div(m, m_blocks), kGemmMr);
  const std::int64_t used_m_blocks = ceil_div(m, mc);
  // Few row blocks: also split the columns, so that every thread has work.
  const std::int64_t n_split = used_m_blocks % threads == 0 ? 1 : threads;

  const std::int64_t nc_pad = round_up(nc, nr);
  const std::int64_t tmp_len = std::max(kc, nc);
  const std::int64_t per_thread = mc * kc + tmp_len + 2 * nc_pad + 16;
  const std::int64_t floats =
      n + kc * nc_pad + round_up(m, kGemmMr) * nc_pad + threads * per_thread + 64;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0, sizeof(float) * static_cast<std::size_t>(floats));
  float* bias = lease.as<float>();
  float* b_pack = bias + round_up(n, 16);
  float* acc = b_pack + kc * nc_pad;
  float* thread_area = acc + round_up(m, kGemmMr) * nc_pad;
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  const float* bias_f32 = call.bias != nullptr ? bias : nullptr;

  if (k == 0) {  // C = beta·C + bias
    std::fill(acc, acc + nc_pad, 0.0f);
    for (std::int64_t j = 0; j < n; j += nc) {
      store_gemm_rows(call, acc, 0, 0, m, j, std::min(nc, n - j), bias_f32, thread_area);
    }
    return;
  }

  for (std::int64_t jc = 0; jc < n; jc += nc) {
    const std::int64_t cols = std::min(nc, n - jc);
    const std::int64_t n_strips = ceil_div(cols, nr);
    const std::int64_t ld_acc = n_strips * nr;
    for (std::int64_t kb = 0; kb < k_blocks; ++kb) {
      const std::int64_t p0 = kb * kc;
      const std::int64_t kcur = std::min(kc, k - p0);
      const bool last = kb + 1 == k_blocks;
      pool.parallel_range(n_strips, 2, [&](int chunk, std::int64_t begin, std::int64_t end) {
        pack_b(call.b, n, jc, begin, end, p0, kcur, nr, b_pack,
               thread_area + chunk * per_thread + mc * kc);
      });
      pool.parallel_range(
          used_m_blocks * n_split, 1, [&](int chunk, std::int64_t begin, std::int64_t end) {
            float* a_pack = thread_area + chunk * per_thread;
            float* tmp = a_pack + mc * kc;
            float* scratch = tmp + tmp_len;
            std::int64_t packed_block = -1;
            for (std::int64_t task = begin; task < end; ++task) {
              const std::int64_t block = task / n_split;
              const std::int64_t part = task % n_split;
              const std::int64_t t0 = part * n_strips / n_split;
              const std::int64_t t1 = (part + 1) * n_strips / n_split;
              if (t0 == t1) continue;
              const std::int64_t i0 = block * mc;
              const std::int64_t rows = std::min(mc, m - i0);
              if (packed_block != block) {
                pack_a(call.a, i0, rows, p0, kcur, a_pack, tmp);
                packed_block = block;
              }
              float* acc_block = acc + i0 * ld_acc + t0 * nr;
              gemm_macro_kernel(a_pack, ceil_div(rows, kGemmMr), b_pack + t0 * kcur * nr, t1 - t0,
                                kcur, acc_block, ld_acc, kb > 0);
              if (last) {
                store_gemm_rows(call, acc_block, ld_acc, i0, i0 + rows, jc + t0 * nr,
                                std::min(t1 * nr, cols) - t0 * nr, bias_f32, scratch);
              }
            }
          });
    }
  }
}

}  // namespace tileops::ops::cpu
