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
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// bfloat16 x and weights on AVX512-BF16: x stays bfloat16 and the dot-product instruction does
// two multiply-adds per lane, so at 16 rows the weights stream at twice the rate that widening
// to float32 FMAs allows.
void dpbf16_decode(const GemmCall& call, const Context& ctx) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  ThreadPool& pool = ctx.threads();
  // Rows padded off multiples of 4 KiB (as below), in floats: x's bfloat16 rows take half.
  const std::int64_t ld_x = (k + 31) / 32 * 32 + 32;
  const std::int64_t ld_out = (n + 15) / 16 * 16;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{ld_out}, {m, ld_x / 2}, {m, ld_out}, {pool.num_threads(), 2, ld_out}},
                      sizeof(float), "gemm: argument 'a': its workspace"));
  float* bias = lease.as<float>();
  auto* x = reinterpret_cast<std::uint16_t*>(bias + ld_out);
  float* out = bias + ld_out + m * ld_x / 2;
  float* scratch = out + m * ld_out;
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  for (std::int64_t i = 0; i < m; ++i) {
    if (call.a.col_stride == 1) {  // one copy per row: element by element took 5% at M = 16
      std::memcpy(x + i * ld_x, element(call.a, i, 0), static_cast<std::size_t>(k) * 2);
      continue;
    }
    for (std::int64_t p = 0; p < k; ++p) std::memcpy(x + i * ld_x + p, element(call.a, i, p), 2);
  }
  // Groups of 6 weight rows (the kernel's tile); at least 16 groups per thread's range.
  const std::int64_t groups = (n + 5) / 6;
  const auto* weights = static_cast<const std::uint16_t*>(call.b.data);
  pool.parallel_range(groups, 16, [&](int chunk, std::int64_t begin, std::int64_t end) {
    const std::int64_t j0 = begin * 6;
    const std::int64_t j1 = std::min(end * 6, n);
    dpbf16_dot_rows(x, ld_x, m, weights + j0 * call.b.col_stride, call.b.col_stride, j1 - j0, k,
                    out + j0, ld_out);
    store_gemm_rows(call, out + j0, ld_out, 0, m, j0, j1 - j0,
                    call.bias != nullptr ? bias : nullptr, scratch + chunk * 2 * ld_out);
  });
}

}  // namespace

void decode_gemm(const GemmCall& call, const Context& ctx) {
  // One row of x streams the weight as fast without AMX; at 16 rows the vector path is bound by
  // its multiply-adds (bench/results/cpu-tuning.md).
  if (call.m > 1 && call.a.dtype == DataType::kBFloat16 && call.b.dtype == DataType::kBFloat16 &&
      amx_bf16_enabled()) {
    return amx_linear_gemm(call, ctx);
  }
  const std::int64_t m = call.m, n = call.n, k = call.k;
  ThreadPool& pool = ctx.threads();
  const int threads = pool.num_threads();
  if (call.a.dtype == DataType::kBFloat16 && call.b.dtype == DataType::kBFloat16 &&
      dpbf16_enabled()) {
    return dpbf16_decode(call, ctx);
  }
  // Rows padded off multiples of 4 KiB: 16 rows at a power-of-two stride would share L1 sets.
  const std::int64_t ld_x = (k + 15) / 16 * 16 + 16;
  const std::int64_t ld_out = (n + 15) / 16 * 16;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{ld_out}, {m, ld_x}, {m, ld_out}, {threads, 2, ld_out}}, sizeof(float),
                      "gemm: argument 'a': its workspace"));
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
