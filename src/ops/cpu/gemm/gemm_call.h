// GemmCall: one matrix product C = alpha·A·B + beta·C + bias as raw strided memory, the form
// every GEMM engine (native, oneDNN) takes. gemm, matmul and linear reduce their contracts to
// it: transposes are swapped strides and batches are offsets (batched_gemm.h).
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"
#include "tileops/runtime/context.h"

namespace tileops::ops::cpu {

// Element (r, c) lives at data + (r·row_stride + c·col_stride) elements.
struct MatrixRef {
  const void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 0;
};

struct GemmCall {
  std::int64_t m = 0, n = 0, k = 0;
  MatrixRef a;  // m×k
  MatrixRef b;  // k×n
  MatrixRef c;  // m×n, written (data is really mutable)
  float alpha = 1.0f;
  float beta = 0.0f;  // 0: C is not read (it may hold NaN)
  // Optional bias[j] added to every row (j·bias_stride elements), any float dtype.
  const void* bias = nullptr;
  DataType bias_dtype = DataType::kFloat32;
  std::int64_t bias_stride = 1;
};

// An engine computes one GemmCall; it may use ctx's thread pool and workspace.
using GemmEngine = void (*)(const GemmCall& call, const Context& ctx);

// The native engine: packed cache-blocked GEMM, with the weight-streaming path for small m.
void native_gemm(const GemmCall& call, const Context& ctx);

// The units that multiply bfloat16 pairs: AMX tiles (amx_bf16_enabled()) or the AVX512-BF16
// dot-product instruction (dpbf16_enabled()).
enum class Bf16Unit { kAmx, kDpbf16 };

// native_gemm's paths for bfloat16 A and B, k > 0: packed_bf16_gemm packs both operands (any
// layout) for the unit's block products; amx_linear_gemm (AMX only) reads B in place and needs
// its columns contiguous (b.row_stride == 1, a linear's weight), for small M.
void packed_bf16_gemm(const GemmCall& call, const Context& ctx, Bf16Unit unit);
void amx_linear_gemm(const GemmCall& call, const Context& ctx);

// The M threshold of the weight-streaming (decode) path.
inline constexpr std::int64_t kDecodeMaxRows = 16;

// The decode path alone: m <= kDecodeMaxRows and B's columns contiguous (b.row_stride == 1).
void decode_gemm(const GemmCall& call, const Context& ctx);

// Applies alpha, beta, bias and rounding to rows [row_begin, row_end) × cols [col_begin,
// col_begin + cols) of C from float32 results acc (row r at acc + (r - row_begin)·ld_acc).
// `bias_f32` is the whole float32 bias row or null; `scratch` holds 2·cols floats.
void store_gemm_rows(const GemmCall& call, const float* acc, std::int64_t ld_acc,
                     std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
                     std::int64_t cols, const float* bias_f32, float* scratch);

}  // namespace tileops::ops::cpu
