#include "tileops/core/dims.h"

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops {

Dims::Dims(std::initializer_list<std::int64_t> values)
    : Dims(std::span<const std::int64_t>(values.begin(), values.size())) {}

Dims::Dims(std::span<const std::int64_t> values) {
  if (values.size() > kMaxRank) {
    throw Error(ErrorKind::kInvalidArgument, "tensor rank " + std::to_string(values.size()) +
                                                 " exceeds the maximum rank " +
                                                 std::to_string(kMaxRank));
  }
  std::copy(values.begin(), values.end(), values_.begin());
  size_ = static_cast<int>(values.size());
}

void Dims::push_back(std::int64_t value) {
  if (size_ == kMaxRank) {
    throw Error(ErrorKind::kInvalidArgument,
                "tensor rank exceeds the maximum rank " + std::to_string(kMaxRank));
  }
  values_[size_++] = value;
}

void Dims::insert(int pos, std::int64_t value) {
  push_back(0);
  for (int i = size_ - 1; i > pos; --i) values_[i] = values_[i - 1];
  values_[pos] = value;
}

void Dims::erase(int pos) {
  for (int i = pos; i + 1 < size_; ++i) values_[i] = values_[i + 1];
  --size_;
}

void Dims::resize(int size, std::int64_t fill) {
  if (size < 0 || size > kMaxRank) {
    throw Error(ErrorKind::kInvalidArgument, "tensor rank " + std::to_string(size) +
                                                 " outside [0, " + std::to_string(kMaxRank) + "]");
  }
  for (int i = size_; i < size; ++i) values_[i] = fill;
  size_ = size;
}

std::int64_t Dims::product() const {
  return checked_product(std::span<const std::int64_t>(begin(), end()), "shape");
}

std::string Dims::to_string() const {
  std::string s = "[";
  for (int i = 0; i < size_; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(values_[i]);
  }
  return s + "]";
}

Dims contiguous_strides(const Dims& shape) {
  Dims strides;
  strides.resize(shape.size());
  std::int64_t stride = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride = checked_mul(stride, std::max<std::int64_t>(shape[i], 1), "contiguous strides");
  }
  return strides;
}

}  // namespace tileops
