#include "tileops/core/tensor.h"

#include <utility>

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops {

std::string Device::to_string() const {
  if (type == DeviceType::kCpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

Tensor::Tensor(void* data, Dims shape, DataType dtype, Device device)
    : data_(data),
      shape_(shape),
      strides_(contiguous_strides(shape)),
      dtype_(dtype),
      device_(device) {
  check_view_geometry(shape_, strides_, dtype_, "tensor");
}

Tensor::Tensor(void* data, Dims shape, Dims strides, DataType dtype, Device device)
    : data_(data), shape_(shape), strides_(strides), dtype_(dtype), device_(device) {
  check_view_geometry(shape_, strides_, dtype_, "tensor");
}

int normalize_dim(int dim, int rank) {
  if (dim < 0) dim += rank;
  return (dim < 0 || dim >= rank) ? -1 : dim;
}

std::int64_t Tensor::size(int dim) const {
  int d = normalize_dim(dim, rank());
  if (d < 0) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "tensor: dim " + std::to_string(dim) + " out of range for rank " + std::to_string(rank()));
  }
  return shape_[d];
}

std::int64_t Tensor::stride(int dim) const {
  int d = normalize_dim(dim, rank());
  if (d < 0) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "tensor: dim " + std::to_string(dim) + " out of range for rank " + std::to_string(rank()));
  }
  return strides_[d];
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // covers no element: any strides will do
  std::int64_t expected = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::element_ptr(const std::int64_t* index) const {
  std::int64_t offset = 0;
  for (int i = 0; i < rank(); ++i) offset += index[i] * strides_[i];
  return static_cast<char*>(data_) + offset * static_cast<std::int64_t>(element_size());
}

Tensor Tensor::with_shape(Dims shape, Dims strides) const {
  return Tensor(data_, shape, strides, dtype_, device_);
}

Tensor Tensor::slice(int dim, std::int64_t start, std::int64_t length) const {
  int d = normalize_dim(dim, rank());
  if (d < 0 || start < 0 || length < 0 || start + length > shape_[d]) {
    throw Error(ErrorKind::kInvalidArgument, "tensor: slice [" + std::to_string(start) + ", " +
                                                 std::to_string(start + length) +
                                                 ") out of range for " + describe());
  }
  Dims shape = shape_;
  shape[d] = length;
  char* base =
      static_cast<char*>(data_) + start * strides_[d] * static_cast<std::int64_t>(element_size());
  return Tensor(base, shape, strides_, dtype_, device_);
}

Tensor Tensor::transpose(int dim0, int dim1) const {
  int a = normalize_dim(dim0, rank());
  int b = normalize_dim(dim1, rank());
  if (a < 0 || b < 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "tensor: transpose dims out of range for " + describe());
  }
  Dims shape = shape_;
  Dims strides = strides_;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return Tensor(data_, shape, strides, dtype_, device_);
}

std::string Tensor::describe() const {
  std::string s(name_of(dtype_));
  s += shape_.to_string();
  if (!is_contiguous()) s += " strides " + strides_.to_string();
  if (device_.type != DeviceType::kCpu) s += " on " + device_.to_string();
  return s;
}

}  // namespace tileops
