#include "tileops/core/tensor_storage.h"

#include <cstdlib>
#include <cstring>

#include "tileops/core/error.h"

namespace tileops {
namespace {

constexpr std::size_t kAlignment = 64;

std::size_t span_elements(const Dims& shape, const Dims& strides) {
  std::int64_t last = 0;
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
    last += (shape[i] - 1) * strides[i];
  }
  return static_cast<std::size_t>(last + 1);
}

}  // namespace

void TensorStorage::FreeDeleter::operator()(void* p) const { std::free(p); }

TensorStorage::TensorStorage(Dims shape, DataType dtype)
    : TensorStorage(shape, contiguous_strides(shape), dtype) {}

TensorStorage::TensorStorage(Dims shape, Dims strides, DataType dtype) {
  Tensor probe(nullptr, shape, strides, dtype);  // validates shape and strides
  bytes_ = span_elements(shape, strides) * size_of(dtype);
  std::size_t rounded = (bytes_ + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* memory = std::aligned_alloc(kAlignment, rounded);
  if (memory == nullptr) {
    throw Error(ErrorKind::kOutOfMemory,
                "TensorStorage: cannot allocate " + std::to_string(rounded) + " bytes");
  }
  memory_.reset(memory);
  view_ = Tensor(memory, shape, strides, dtype);
}

void TensorStorage::fill_bytes(unsigned char value) {
  if (bytes_ > 0) std::memset(memory_.get(), value, bytes_);
}

}  // namespace tileops
