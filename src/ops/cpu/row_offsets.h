// RowOffsets: element offsets of the rows of a strided tensor, where a row is the last dim and
// rows are numbered row-major over the other dims.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"

namespace tileops::ops::cpu {

class RowOffsets {
 public:
  explicit RowOffsets(const Tensor& t) : RowOffsets(t.shape(), t.strides()) {}
  RowOffsets(const Dims& shape, const Dims& strides) {
    for (int i = 0; i + 1 < shape.size(); ++i) {
      shape_.push_back(shape[i]);
      strides_.push_back(strides[i]);
    }
  }

  std::int64_t rows() const { return shape_.product(); }

  std::int64_t operator()(std::int64_t row) const {
    std::int64_t offset = 0;
    for (int i = shape_.size() - 1; i >= 0; --i) {
      offset += (row % shape_[i]) * strides_[i];
      row /= shape_[i];
    }
    return offset;
  }

 private:
  Dims shape_;
  Dims strides_;
};

// Byte address of element `offset` of t.
inline char* element_at(const Tensor& t, std::int64_t offset) {
  return static_cast<char*>(t.data()) + offset * static_cast<std::int64_t>(t.element_size());
}

}  // namespace tileops::ops::cpu
