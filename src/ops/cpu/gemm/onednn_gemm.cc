// The vendor engine: oneDNN's dnnl_sgemm (row-major, its JIT kernels and its own OpenMP threads).
// float32 operands with a unit stride in either dim go in directly; other strides and the 16-bit
// dtypes are first converted to contiguous float32 — oneDNN 2.6 offers no public bf16/f16 GEMM
// call and its bf16 matmul primitive needs AVX512-BF16 for speed. Results land in float32 and
// go through the shared epilogue (alpha, beta, bias, rounding), so C is never read at beta = 0.
#include <dnnl.h>

#include <algorithm>
#include <string>

#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/error.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// A rows×cols operand as a row-major float32 matrix for sgemm: in place when it is one, else
// converted into buf. Sets trans ('N' or 'T') and the leading dimension.
const float* as_sgemm_operand(const MatrixRef& x, std::int64_t rows, std::int64_t cols, float* buf,
                              char* trans, std::int64_t* ld) {
  if (x.dtype == DataType::kFloat32) {
    if (x.col_stride == 1 && x.row_stride >= std::max<std::int64_t>(1, cols)) {
      *trans = 'N';
      *ld = x.row_stride;
      return static_cast<const float*>(x.data);
    }
    if (x.row_stride == 1 && x.col_stride >= std::max<std::int64_t>(1, rows)) {
      *trans = 'T';
      *ld = x.col_stride;
      return static_cast<const float*>(x.data);
    }
  }
  if (x.row_stride == 1 && x.col_stride != 1) {  // columns contiguous (linear's weight)
    for (std::int64_t c = 0; c < cols; ++c) {
      load_f32(element(x, 0, c), x.dtype, 1, rows, buf + c * rows);
    }
    *trans = 'T';
    *ld = std::max<std::int64_t>(1, rows);
    return buf;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    load_f32(element(x, r, 0), x.dtype, x.col_stride, cols, buf + r * cols);
  }
  *trans = 'N';
  *ld = std::max<std::int64_t>(1, cols);
  return buf;
}

}  // namespace

void onednn_gemm(const GemmCall& call, const Context& ctx) {
  const std::int64_t m = call.m, n = call.n, k = call.k;
  if (m == 0 || n == 0) return;
  WorkspacePool::Lease lease =
      ctx.workspace().acquire(kCpu, ctx.stream, 0,
                              workspace_bytes({{m, k}, {k, n}, {m, n}, {3, n}, {64}}, sizeof(float),
                                              "gemm: argument 'a': its workspace"));
  float* a_buf = lease.as<float>();
  float* b_buf = a_buf + m * k;
  float* c_buf = b_buf + k * n;
  float* bias = c_buf + m * n;
  float* scratch = bias + n;
  if (k == 0) {
    std::fill(c_buf, c_buf + m * n, 0.0f);
  } else {
    char ta = 'N', tb = 'N';
    std::int64_t lda = 0, ldb = 0;
    const float* a = as_sgemm_operand(call.a, m, k, a_buf, &ta, &lda);
    const float* b = as_sgemm_operand(call.b, k, n, b_buf, &tb, &ldb);
    const dnnl_status_t status = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c_buf, n);
    if (status != dnnl_success) {
      throw_internal_error("onednn gemm",
                           "dnnl_sgemm failed with status " + std::to_string(status));
    }
  }
  if (call.bias != nullptr) load_f32(call.bias, call.bias_dtype, call.bias_stride, n, bias);
  store_gemm_rows(call, c_buf, n, 0, m, 0, n, call.bias != nullptr ? bias : nullptr, scratch);
}

}  // namespace tileops::ops::cpu
