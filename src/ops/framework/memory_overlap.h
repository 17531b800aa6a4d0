// Whether two strided views share a byte. The overlap checks of every operator (ArgCheck) ask
// this for each output against each input and each other output, so the common answers (empty,
// disjoint extents, runs and rows of one stride) come first and cost a few comparisons; other
// layouts are decided exactly by a bounded search (memory_overlap.cc says how).
#pragma once

#include <cstdint>
#include <span>

#include "tileops/core/tensor.h"

namespace tileops::ops {

// A strided view as the bytes it touches: element x (0 <= x[i] < shape[i]) occupies
// element_size bytes from begin + sum(x[i] * strides[i]) * element_size. Extents and strides
// (in elements) are non-negative; a stride of 0 revisits its bytes; an empty view touches none.
struct ByteView {
  std::uintptr_t begin = 0;
  std::int64_t element_size = 1;
  std::span<const std::int64_t> shape;
  std::span<const std::int64_t> strides;
};

enum class Overlap {
  kApart,      // no byte touched by both
  kShared,     // at least one byte touched by both
  kUndecided,  // the search took more than its work limit, or a quantity overflowed int64
};

// Steps of the search before it gives up: far above what slices, permutations and paddings of
// dense buffers need (a few each), and a bound on what a hostile layout costs (about 25 us).
inline constexpr std::int64_t kOverlapWorkLimit = 1024;

// Exact unless kUndecided. `max_work` bounds the search's steps.
Overlap memory_overlap(const ByteView& a, const ByteView& b,
                       std::int64_t max_work = kOverlapWorkLimit);

// The search alone, without the fast paths before it (for tests: both must agree).
Overlap memory_overlap_by_search(const ByteView& a, const ByteView& b,
                                 std::int64_t max_work = kOverlapWorkLimit);

// For the overlap checks: kUndecided counts as shared, so a view the search cannot settle is
// refused, never written through while it may alias.
bool may_share_memory(const Tensor& a, const Tensor& b);

}  // namespace tileops::ops
