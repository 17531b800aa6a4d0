#include "tileops/core/tensor_storage.h"

#include <cstdlib>
#include <cstring>

#include "src/core/host_memory.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops {
namespace {

// Tensors of kLarge bytes or more take huge pages (allocate_host): a paged KV cache read block
// by block then needs one TLB entry per 2 MiB. Not below: the 1.1B decoder's int8 decode lost 7%
// at 2 threads with its projections in huge pages (bench/results/cpu-tuning.md).
constexpr std::size_t kLarge = std::size_t{64} << 20;

}  // namespace

void TensorStorage::FreeDeleter::operator()(void* p) const { std::free(p); }

TensorStorage::TensorStorage(Dims shape, DataType dtype)
    : TensorStorage(shape, contiguous_strides(shape), dtype) {}

TensorStorage::TensorStorage(Dims shape, Dims strides, DataType dtype) {
  Tensor probe(nullptr, shape, strides, dtype);  // validates shape and strides
  bytes_ = static_cast<std::size_t>(checked_bytes(checked_span(shape, strides, "TensorStorage"),
                                                  size_of(dtype), "TensorStorage"));
  void* memory = allocate_host(bytes_, kLarge, "TensorStorage");
  memory_.reset(memory);
  view_ = Tensor(memory, shape, strides, dtype);
}

void TensorStorage::fill_bytes(unsigned char value) {
  if (bytes_ > 0) std::memset(memory_.get(), value, bytes_);
}

}  // namespace tileops
