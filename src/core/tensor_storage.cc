#include "tileops/core/tensor_storage.h"

#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops {
namespace {

constexpr std::size_t kAlignment = 64;
// Allocations of at least kLarge start on a 2 MiB boundary and ask Linux for transparent huge
// pages over the whole 2 MiB pages they span (its default policy, "madvise", gives them only when
// asked; the tail stays in 4 KiB pages, so no memory is added): a paged KV cache read block by
// block, or a weight streamed once per token, then needs one TLB entry per 2 MiB instead of per
// 4 KiB (linear_quantized int8 M = 1 on 16 MiB weights, one thread, Zen 4: 0.75 -> 0.88 of copy;
// bench/results/cpu-tuning.md).
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kLarge = std::size_t{4} << 20;

}  // namespace

void TensorStorage::FreeDeleter::operator()(void* p) const { std::free(p); }

TensorStorage::TensorStorage(Dims shape, DataType dtype)
    : TensorStorage(shape, contiguous_strides(shape), dtype) {}

TensorStorage::TensorStorage(Dims shape, Dims strides, DataType dtype) {
  Tensor probe(nullptr, shape, strides, dtype);  // validates shape and strides
  bytes_ = static_cast<std::size_t>(checked_bytes(checked_span(shape, strides, "TensorStorage"),
                                                  size_of(dtype), "TensorStorage"));
  const std::size_t alignment = bytes_ >= kLarge ? kHugePage : kAlignment;
  std::size_t rounded = (bytes_ + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = kAlignment;
  void* memory = std::aligned_alloc(alignment, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (memory != nullptr && alignment == kHugePage) {
    madvise(memory, bytes_ / kHugePage * kHugePage, MADV_HUGEPAGE);
  }
#endif
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
