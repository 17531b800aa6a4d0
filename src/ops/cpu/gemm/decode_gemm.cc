// The small-M (decode) path: with at most 16 rows of A, C is a handful of dot products per
// weight row, bound by reading B. Each thread streams its share of B's columns (rows of a
// linear weight, contiguous along K) exactly once, in B's own dtype, against all rows of A held
// as float32 in cache; no packing, so no second pass over the weights.
#include <algorithm>
#include <cstring>

#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {

namespace {

std::int64_t round_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b * b; }

// bfloat16 x and weight on AMX (amx_kernels.h): the weight's 16-row tiles are read in place as
// the left operand against X's rows packed once as the right one, so every weight byte is read
// once and the product costs 1/16 of a tile product per weight row and K step. A partial last
// tile and the K tail past a multiple of 32 go through small zero-padded copies.
void amx_decode_gemm(const GemmCall& call, const Context& ctx) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  const std::int64_t k_main = k / kAmxK * kAmxK;
  const std::int64_t k_pad = round_up(k, kAmxK);
  const std::int64_t tiles = (n + kAmxRows - 1) / kAmxRows;
  const std::int64_t ld_out = tiles * kAmxRows;
  // Per thread: zero-padded copies of the weight (the partial tile, 16 × k_pad; the K tails of
  // the whole tiles, ld_out × kAmxK), the transposed results of its tiles, and m rows of them plus
  // 2 epilogue rows.
  const std::int64_t copy_floats = (kAmxRows * k_pad + ld_out * kAmxK) / 2;
  const std::int64_t per_thread = copy_floats + ld_out * kAmxCols + (m + 2) * ld_out;
  const std::int64_t floats = ld_out + k_pad * kAmxCols / 2 + threads * per_thread + 64;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0, sizeof(float) * static_cast<std::size_t>(floats));
  float* bias = lease.as<float>();
  auto* xt = reinterpret_cast<std::uint16_t*>(bias + ld_out);
  float* thread_area = bias + ld_out + k_pad * kAmxCols / 2;
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  const auto* w = static_cast<const std::uint16_t*>(call.b.data);
  const std::int64_t ld_w = call.b.col_stride;  // weight row j at w + j·ld_w
  // X's rows, pair-interleaved (amx_kernels.h), zero past m and k.
  std::fill(xt, xt + k_pad * kAmxCols, std::uint16_t{0});
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t p = 0; p < k; ++p) {
      std::memcpy(xt + p / 2 * 2 * kAmxCols + 2 * i + p % 2, element(call.a, i, p), 2);
    }
  }
  // Rows [j0, j0 + rows) × K [p0, p0 + cols) of the weight into `dst` (row stride cols_pad, zero
  // padded to a multiple of 16 rows).
  auto copy_rows = [&](std::int64_t j0, std::int64_t rows, std::int64_t p0, std::int64_t cols,
                       std::int64_t cols_pad, std::uint16_t* dst) {
    for (std::int64_t r = 0; r < round_up(rows, kAmxRows); ++r) {
      for (std::int64_t p = 0; p < cols_pad; ++p) {
        dst[r * cols_pad + p] = r < rows && p < cols ? w[(j0 + r) * ld_w + p0 + p] : 0;
      }
    }
  };
  pool.parallel_range(tiles, 4, [&](int chunk, std::int64_t begin, std::int64_t end) {
    auto* copy = reinterpret_cast<std::uint16_t*>(thread_area + chunk * per_thread);
    float* tiles_out = thread_area + chunk * per_thread + copy_floats;
    float* acc = tiles_out + ld_out * kAmxCols;
    float* scratch = acc + m * ld_out;
    const std::int64_t full_end = std::min(end, n / kAmxRows);  // tiles with 16 real rows
    if (begin < full_end) {
      const std::int64_t full = full_end - begin;
      if (k_main > 0) {
        amx_bf16_rows(w + begin * kAmxRows * ld_w, ld_w, full, k_main, xt, tiles_out, false);
      }
      if (k_main < k) {
        copy_rows(begin * kAmxRows, full * kAmxRows, k_main, k - k_main, kAmxK, copy);
        amx_bf16_rows(copy, kAmxK, full, kAmxK, xt + k_main * kAmxCols, tiles_out, k_main > 0);
      }
    }
    if (full_end < end) {  // the last tile, fewer than 16 rows
      copy_rows(full_end * kAmxRows, n - full_end * kAmxRows, 0, k, k_pad, copy);
      amx_bf16_rows(copy, k_pad, 1, k_pad, xt, tiles_out + (full_end - begin) * kAmxRows * kAmxCols,
                    false);
    }
    const std::int64_t j0 = begin * kAmxRows;
    const std::int64_t j1 = std::min(end * kAmxRows, n);
    for (std::int64_t j = j0; j < j1; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        acc[i * ld_out + (j - j0)] = tiles_out[(j - j0) * kAmxCols + i];
      }
    }
    store_gemm_rows(call, acc, ld_out, 0, m, j0, j1 - j0, call.bias != nullptr ? bias : nullptr,
                    scratch);
  });
}

}  // namespace

void decode_gemm(const GemmCall& call, const Context& ctx) {
  // One row of x streams the weight as fast without AMX (N = K = 4096: 39 against 34 GB/s); at 16
  // rows the vector path is bound by its multiply-adds (10 against 23 GB/s).
  if (call.m > 1 && call.a.dtype == DataType::kBFloat16 && call.b.dtype == DataType::kBFloat16 &&
      amx_bf16_enabled()) {
    return amx_decode_gemm(call, ctx);
  }
  const std::int64_t m = call.m, n = call.n, k = call.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  // Rows padded off multiples of 4 KiB: 16 rows at a power-of-two stride would share L1 sets.
  const std::int64_t ld_x = (k + 15) / 16 * 16 + 16;
  const std::int64_t ld_out = (n + 15) / 16 * 16;
  const std::int64_t floats = ld_out + m * ld_x + m * ld_out + threads * 2 * ld_out;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0, sizeof(float) * static_cast<std::size_t>(floats));
  float* bias = lease.as<float>();
  float* x = bias + ld_out;
  float* out = x + m * ld_x;
  float* scratch = out + m * ld_out;
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  for (std::int64_t i = 0; i < m; ++i) {
    load_f32(element(call.a, i, 0), call.a.dtype, call.a.col_stride, k, x + i * ld_x);
  }
  const std::size_t w_size = size_of(call.b.dtype);
  // Groups of 4 weight rows (the kernel's tile); at least 16 groups per thread's range.
  const std::int64_t groups = (n + 3) / 4;
  pool.parallel_range(groups, 16, [&](int chunk, std::int64_t begin, std::int64_t end) {
    const std::int64_t j0 = begin * 4;
    const std::int64_t j1 = std::min(end * 4, n);
    const char* w = static_cast<const char*>(call.b.data) +
                    j0 * call.b.col_stride * static_cast<std::int64_t>(w_size);
    gemm_dot_rows(x, ld_x, m, w, call.b.dtype, call.b.col_stride, j1 - j0, k, out + j0, ld_out);
    store_gemm_rows(call, out + j0, ld_out, 0, m, j0, j1 - j0,
                    call.bias != nullptr ? bias : nullptr, scratch + chunk * 2 * ld_out);
  });
}

}  // namespace tileops::ops::cpu
