// What the attention contracts hand to their implementations besides the tensors: the layout of
// the Problem's attribute vector, and index reads (int32 or int64) through strides (cu_seqlens,
// seq_lens, block tables are data, read on the host).
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"

namespace tileops::ops {

// Attribute vector layout of the flash_attention and paged_attention Problems.
enum AttentionAttr : int {
  kAttrHeads,
  kAttrKvHeads,
  kAttrHeadSize,
  kAttrScale,
  kAttrCausal,
  kAttrWindowLeft,   // -1: unbounded
  kAttrWindowRight,  // -1: unbounded; 0 when causal
  kAttrBlockSize,    // 0 when not paged
  kAttrCount
};

// Element i of an int32 or int64 vector / (i, j) of a matrix, through the strides, exactly:
// the contracts bound the values they read this way before a kernel uses them.
inline std::int64_t index_at(const Tensor& t, std::int64_t i) {
  const std::int64_t at = i * t.stride(0);
  return t.dtype() == DataType::kInt64 ? t.data_as<const std::int64_t>()[at]
                                       : t.data_as<const std::int32_t>()[at];
}
inline std::int64_t index_at(const Tensor& t, std::int64_t i, std::int64_t j) {
  const std::int64_t at = i * t.stride(0) + j * t.stride(1);
  return t.dtype() == DataType::kInt64 ? t.data_as<const std::int64_t>()[at]
                                       : t.data_as<const std::int32_t>()[at];
}

}  // namespace tileops::ops
