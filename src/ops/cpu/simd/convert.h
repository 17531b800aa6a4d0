// Float32 row access for every float dtype: the hot paths of the float operators load rows of
// float32/float16/bfloat16 into float32 scratch, compute, and store back with
// round-to-nearest-even. Contiguous rows (stride 1) use SIMD; other strides gather/scatter.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// dst[i] = src[i * stride] as float32, for i in [0, n); stride 0 broadcasts src[0].
// dtype: float32, float16 or bfloat16.
void load_f32(const void* src, DataType dtype, std::int64_t stride, std::int64_t n, float* dst);

// dst[i * stride] = round(src[i]) for i in [0, n). dtype: float32, float16 or bfloat16.
void store_f32(const float* src, void* dst, DataType dtype, std::int64_t stride, std::int64_t n);

// Returns src itself when it already is a contiguous float32 row, else loads into scratch.
inline const float* row_f32(const void* src, DataType dtype, std::int64_t stride, std::int64_t n,
                            float* scratch) {
  if (dtype == DataType::kFloat32 && stride == 1) return static_cast<const float*>(src);
  load_f32(src, dtype, stride, n, scratch);
  return scratch;
}

}  // namespace tileops::ops::cpu
