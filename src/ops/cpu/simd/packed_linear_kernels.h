// SIMD kernels of linear over a packed weight (src/ops/cpu/gemm/packed_linear.cc): one block is
// 16 weight rows × 16 rows of x over a run of K, with the x rows as the lanes of the
// accumulators. Each weight element is broadcast once and multiplies all 16 x rows, so the
// weight streams once, sequentially, with no horizontal sums (the bfloat16 form is
// dpbf16_packed_block in dpbf16_kernels.h).
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// acc[j·16 + i] = (accumulate ? acc[j·16 + i] : 0) + Σ_p x[p·16 + i] · w[p·16 + j] over
// p < steps: weight rows j and x rows i, both float32 [steps][16]. fetch: the weight stream is
// also prefetched into L2 a few KiB ahead (set when it comes from memory).
void packed_block_f32(const float* x, const float* w, std::int64_t steps, float* acc,
                      bool accumulate, bool fetch);

// The same for two blocks of 16 x rows and half of the weight rows, as
// dpbf16_packed_half_blocks: w points at row 8·h of step 0 (w_group + 8·h), acc0/acc1[j·16 + i]
// take rows 8·h + j, j < 8.
void packed_half_blocks_f32(const float* x0, const float* x1, const float* w, std::int64_t steps,
                            float* acc0, float* acc1, bool accumulate, bool fetch);

// The form for a few rows of x (decode): x's rows stay rows (x[i] points at the block's first K
// element of row i, float32, steps elements) and the group's 16 weight rows are the lanes, so
// that no work goes to padding rows of x: acc[i·ld_acc + j] = (accumulate ? that : 0) +
// Σ_p x[i][p] · w[p][j], weight row j < 16, i < m <= packed_rows_pass_max(dtype). The block w is
// in its packed dtype: float32 or float16 [steps][16], bfloat16 [steps / 2][16][2] (steps even).
// fetch as above.
inline constexpr int kPackedRowsMax = 6;  // the largest packed_rows_pass_max() of any target
int packed_rows_pass_max(DataType dtype);
// The largest M for which linear_packed takes this form on the dispatched SIMD target.
std::int64_t packed_rows_path_max();
void packed_rows_block(const float* const* x, int m, const void* w, DataType dtype,
                       std::int64_t steps, float* acc, std::int64_t ld_acc, bool accumulate,
                       bool fetch);

// The float32 [steps][16] block packed_block_f32 takes, from a packed float16 block (the same
// order) or a bfloat16 block of K pairs ([steps / 2][16][2], steps even).
void unpack_block_f32(const void* src, DataType dtype, std::int64_t steps, float* dst);

}  // namespace tileops::ops::cpu
