// Byte addresses of matrix elements of a MatrixRef (gemm_call.h).
#pragma once

#include <cstdint>

#include "src/ops/cpu/gemm/gemm_call.h"

namespace tileops::ops::cpu {

inline const void* element(const MatrixRef& matrix, std::int64_t row, std::int64_t col) {
  return static_cast<const char*>(matrix.data) +
         (row * matrix.row_stride + col * matrix.col_stride) *
             static_cast<std::int64_t>(size_of(matrix.dtype));
}

// C's elements are written: a GemmCall's c is mutable memory held through a const pointer.
inline void* mutable_element(const MatrixRef& matrix, std::int64_t row, std::int64_t col) {
  return const_cast<void*>(
      element(matrix, row, col));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
}

}  // namespace tileops::ops::cpu
