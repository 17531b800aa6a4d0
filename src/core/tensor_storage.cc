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
// Allocations of at least kLarge start on a 2 MiB boundary, are rounded up to whole 2 MiB pages
// (at most 3% more) and ask Linux for transparent huge pages (its default policy, "madvise",
// gives them only when asked): a paged KV cache read block by block then needs one TLB entry per
// 2 MiB instead of per 4 KiB (bench/results/cpu-tuning.md).
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kLarge = std::size_t{64} << 20;

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
  if (memory != nullptr && alignment == kHugePage) madvise(memory, rounded, MADV_HUGEPAGE);
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
