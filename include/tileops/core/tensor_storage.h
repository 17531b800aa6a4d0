// TensorStorage: owning, 64-byte aligned CPU memory with a contiguous Tensor view (64 MiB and more:
// 2 MiB aligned, in transparent huge pages where Linux offers them). Used by tests, examples,
// benchmarks and the Python package; operators only ever see Tensor views.
#pragma once

#include <cstddef>
#include <memory>

#include "tileops/core/tensor.h"

namespace tileops {

class TensorStorage {
 public:
  TensorStorage() = default;
  // Uninitialised storage for a contiguous tensor.
  TensorStorage(Dims shape, DataType dtype);
  // Storage sized for a strided view (the largest offset the strides reach, plus one).
  TensorStorage(Dims shape, Dims strides, DataType dtype);

  const Tensor& view() const { return view_; }
  operator const Tensor&() const { return view_; }  // NOLINT(google-explicit-constructor)
  void* data() const { return view_.data(); }
  std::size_t bytes() const { return bytes_; }

  // Fills every byte of the allocation (including gaps between strided elements).
  void fill_bytes(unsigned char value);

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeDeleter> memory_;
  std::size_t bytes_ = 0;
  Tensor view_;
};

}  // namespace tileops
