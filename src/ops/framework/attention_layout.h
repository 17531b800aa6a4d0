// What the attention contracts hand to their implementations besides the tensors: the layout of
// the Problem's attribute vector, and int32 index reads through strides (cu_seqlens, seq_lens,
// block tables are data, read on the host).
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

// Element i of an int32 vector / (i, j) of an int32 matrix, through the strides.
inline std::int32_t index_at(const Tensor& t, std::int64_t i) {
  return t.data_as<const std::int32_t>()[i * t.stride(0)];
}
inline std::int32_t index_at(const Tensor& t, std::int64_t i, std::int64_t j) {
  return t.data_as<const std::int32_t>()[i * t.stride(0) + j * t.stride(1)];
}

}  // namespace tileops::ops
