// The epilogue shared by every GEMM engine: float32 results → alpha·acc + beta·C + bias, rounded
// once to C's dtype. C is read only when beta != 0, so NaN garbage in C never leaks.
#include "src/ops/cpu/gemm/gemm_call.h"
#include "src/ops/cpu/gemm/matrix_access.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/gemm_kernels.h"

namespace tileops::ops::cpu {

void store_gemm_rows(const GemmCall& call, const float* acc, std::int64_t ld_acc,
                     std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
                     std::int64_t cols, const float* bias_f32, float* scratch) {
  const MatrixRef& c = call.c;
  const bool direct = c.dtype == DataType::kFloat32 && c.col_stride == 1;
  const float* bias = bias_f32 != nullptr ? bias_f32 + col_begin : nullptr;
  for (std::int64_t r = row_begin; r < row_end; ++r) {
    void* dst = mutable_element(c, r, col_begin);
    const float* old = nullptr;
    if (call.beta != 0.0f) old = row_f32(dst, c.dtype, c.col_stride, cols, scratch);
    float* out = direct ? static_cast<float*>(dst) : scratch + cols;
    gemm_epilogue_row(acc + (r - row_begin) * ld_acc, call.alpha, old, call.beta, bias, cols, out);
    if (!direct) store_f32(out, dst, c.dtype, c.col_stride, cols);
  }
}

}  // namespace tileops::ops::cpu
