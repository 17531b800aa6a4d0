// Tensor: a non-owning strided view of memory. Strides are in elements and non-negative;
// a stride of 0 broadcasts along that dim (allowed for inputs only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tileops/core/data_type.h"
#include "tileops/core/device.h"
#include "tileops/core/dims.h"

namespace tileops {

class Tensor {
 public:
  Tensor() = default;
  // Contiguous view.
  Tensor(void* data, Dims shape, DataType dtype, Device device = kCpu);
  // Strided view; throws when strides and shape differ in length or a stride is negative.
  Tensor(void* data, Dims shape, Dims strides, DataType dtype, Device device = kCpu);

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data_);
  }
  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Dims& shape() const { return shape_; }
  const Dims& strides() const { return strides_; }
  int rank() const { return shape_.size(); }
  // Extent and stride of a dim; negative dims count from the end.
  std::int64_t size(int dim) const;
  std::int64_t stride(int dim) const;
  std::int64_t numel() const { return shape_.product(); }
  std::size_t element_size() const { return size_of(dtype_); }
  bool defined() const { return data_ != nullptr || numel() == 0; }

  // True when the view covers numel() consecutive elements in row-major order (always when empty).
  bool is_contiguous() const;
  // Address of the element at a multi-index (no bounds checks).
  void* element_ptr(const std::int64_t* index) const;

  // Views.
  Tensor with_shape(Dims shape, Dims strides) const;
  Tensor slice(int dim, std::int64_t start, std::int64_t length) const;
  Tensor transpose(int dim0, int dim1) const;

  // "float32[4, 4096] strides [8192, 1]" for error messages.
  std::string describe() const;

 private:
  void* data_ = nullptr;
  Dims shape_;
  Dims strides_;
  DataType dtype_ = DataType::kFloat32;
  Device device_ = kCpu;
};

// Wraps a negative dim into [0, rank); returns -1 when out of range.
int normalize_dim(int dim, int rank);

}  // namespace tileops
