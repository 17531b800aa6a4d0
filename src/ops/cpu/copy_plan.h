// CopyPlan: a strided copy between two views of one shape, of any dtype, planned once per
// geometry. Dims of extent 1 are dropped and dims contiguous on both sides merged, so
// contiguous data moves as long memcpy runs and other layouts as few, long strided runs.
// Copies whose fastest dims cross (transposes) are not tiled: for a rare layout, the gain did not
// pay for the complexity (bench/results/cpu-tuning.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tileops/core/dims.h"

namespace tileops::ops::cpu {

// A copy of numel elements, numbered row-major over `shape`; offsets and strides in elements.
struct CopyPlan {
  Dims shape;
  Dims src_strides;
  Dims dst_strides;
  std::int64_t src_offset = 0;
  std::int64_t dst_offset = 0;
  std::int64_t numel = 0;
};

// Plans copying a view of `shape` with src_strides onto one with dst_strides (offsets 0).
// Ranges of the plan's elements may be copied in any order, on any threads.
CopyPlan plan_copy(const Dims& shape, const Dims& src_strides, const Dims& dst_strides);

// Copies elements [begin, end) of `plan` from the view at src to the view at dst. dst must not
// overlap src.
void copy_range(const CopyPlan& plan, const void* src, void* dst, std::int64_t begin,
                std::int64_t end, std::size_t element_size);

}  // namespace tileops::ops::cpu
