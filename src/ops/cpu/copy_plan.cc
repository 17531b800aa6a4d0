#include "src/ops/cpu/copy_plan.h"

#include <algorithm>

#include "src/ops/cpu/strided_copy.h"

namespace tileops::ops::cpu {
CopyPlan plan_copy(const Dims& shape, const Dims& src_strides, const Dims& dst_strides) {
  CopyPlan plan;
  plan.numel = shape.product();
  if (plan.numel == 0) {  // nothing to copy; an empty view's strides are unbounded: merge none
    plan.shape.push_back(0);
    plan.src_strides.push_back(1);
    plan.dst_strides.push_back(1);
    return plan;
  }
  for (int i = 0; i < shape.size(); ++i) {
    const std::int64_t n = shape[i];
    if (n == 1) continue;
    // Dim i continues the previous one on both sides: one longer dim covers both.
    const int last = plan.shape.size() - 1;
    if (last >= 0 && plan.src_strides[last] == n * src_strides[i] &&
        plan.dst_strides[last] == n * dst_strides[i]) {
      plan.shape[last] *= n;
      plan.src_strides[last] = src_strides[i];
      plan.dst_strides[last] = dst_strides[i];
      continue;
    }
    plan.shape.push_back(n);
    plan.src_strides.push_back(src_strides[i]);
    plan.dst_strides.push_back(dst_strides[i]);
  }
  if (plan.shape.empty()) {  // a single element
    plan.shape.push_back(1);
    plan.src_strides.push_back(1);
    plan.dst_strides.push_back(1);
  }
  return plan;
}

void copy_range(const CopyPlan& plan, const void* src, void* dst, std::int64_t begin,
                std::int64_t end, std::size_t element_size) {
  const int rank = plan.shape.size();
  const auto bytes = static_cast<std::int64_t>(element_size);
  const char* src_base = static_cast<const char*>(src) + plan.src_offset * bytes;
  char* dst_base = static_cast<char*>(dst) + plan.dst_offset * bytes;
  std::int64_t index[kMaxRank];
  std::int64_t flat = begin;
  for (int d = rank - 1; d >= 0; --d) {
    index[d] = flat % plan.shape[d];
    flat /= plan.shape[d];
  }
  const std::int64_t width = plan.shape[rank - 1];
  while (begin < end) {
    std::int64_t src_offset = 0;
    std::int64_t dst_offset = 0;
    for (int d = 0; d < rank; ++d) {
      src_offset += index[d] * plan.src_strides[d];
      dst_offset += index[d] * plan.dst_strides[d];
    }
    const std::int64_t run = std::min(width - index[rank - 1], end - begin);
    copy_elements(src_base + src_offset * bytes, plan.src_strides[rank - 1],
                  dst_base + dst_offset * bytes, plan.dst_strides[rank - 1], run, element_size);
    begin += run;
    index[rank - 1] = 0;
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[d] < plan.shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace tileops::ops::cpu
