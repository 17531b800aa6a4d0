// The small-M (decode) path: with at most 16 rows of A, C is a handful of dot products per
// weight row, bound by reading B. Each thread streams its share of B's columns (rows of a
// linear weight, contiguous along K) exactly once, in B's own dtype, against all rows of A held
// as float32 in cache; no packing, so no second pass over the weights.
#include <algorithm>

#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {

void decode_gemm(const GemmCall& call, const Context& ctx) {
  // One row of x streams the weight as fast without AMX (N = K = 4096: 39 against 34 GB/s); at 16
  // rows the vector path is bound by its multiply-adds (10 against 23 GB/s).
  if (call.m > 1 && call.a.dtype == DataType::kBFloat16 && call.b.dtype == DataType::kBFloat16 &&
      amx_bf16_enabled()) {
    return amx_linear_gemm(call, ctx);
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
