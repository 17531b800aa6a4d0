// The geometry both attention operators share: resolved attributes, the sequences of one call
// (read from the cumulative lengths or sequence lengths), the visible key range of a query row,
// and where key/value rows live (packed [T, Hkv, D] or paged [blocks, block_size, Hkv, D], the
// paged form also with D split in two, [.., D / x, x]).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/ops/framework/attention_layout.h"
#include "tileops/core/tensor.h"
#include "tileops/ops/problem.h"

namespace tileops::ops::cpu {

struct AttentionShape {
  std::int64_t heads = 0, kv_heads = 0, group = 0, head_size = 0;
  float scale = 0;
  std::int64_t window_left = -1, window_right = -1;  // -1 = unbounded (causal: right = 0)
  std::int64_t block_size = 0;                       // 0: not paged

  static AttentionShape of(const Problem& problem) {
    const auto& a = problem.attributes;
    AttentionShape s;
    s.heads = static_cast<std::int64_t>(a[kAttrHeads]);
    s.kv_heads = static_cast<std::int64_t>(a[kAttrKvHeads]);
    s.group = s.heads / s.kv_heads;
    s.head_size = static_cast<std::int64_t>(a[kAttrHeadSize]);
    s.scale = static_cast<float>(a[kAttrScale]);
    s.window_left = static_cast<std::int64_t>(a[kAttrWindowLeft]);
    s.window_right = static_cast<std::int64_t>(a[kAttrWindowRight]);
    s.block_size = static_cast<std::int64_t>(a[kAttrBlockSize]);
    return s;
  }
};

struct Sequence {
  std::int64_t q_start = 0, q_len = 0;    // rows of the query (flash) or the batch index (decode)
  std::int64_t kv_start = 0, kv_len = 0;  // kv_start: first packed key row (0 when paged)
};

// Keys [lo, hi] visible to query row i of a sequence (bottom-right aligned); lo > hi: none.
struct VisibleKeys {
  std::int64_t lo, hi;
};
inline VisibleKeys visible_keys(const AttentionShape& s, const Sequence& seq, std::int64_t i) {
  const std::int64_t diagonal = i + seq.kv_len - seq.q_len;
  const std::int64_t lo =
      s.window_left < 0 ? 0 : std::max<std::int64_t>(0, diagonal - s.window_left);
  const std::int64_t hi =
      s.window_right < 0 ? seq.kv_len - 1 : std::min(seq.kv_len - 1, diagonal + s.window_right);
  return {lo, hi};
}

// Key or value rows of one tensor: element (key j of sequence seq, kv head h, d). A paged
// cache of rank 5 splits d into (d / x, d % x) over its last two dims.
class KvRows {
 public:
  KvRows(const Tensor& t, const Tensor& block_table, std::int64_t block_size)
      : base_(static_cast<const char*>(t.data())),
        element_(static_cast<std::int64_t>(t.element_size())),
        paged_(block_size > 0),
        block_size_(block_size),
        table_(block_table) {
    const int r = t.rank();
    for (int i = 0; i < r; ++i) strides_[i] = t.stride(i);
    d_stride_ = t.stride(r - 1);
    if (r == 5) split_ = t.size(4), split_stride_ = t.stride(3);
  }

  // Address of element 0 of row j (key j of the sequence, kv head h).
  const void* row(std::int64_t sequence_index, const Sequence& seq, std::int64_t h,
                  std::int64_t j) const {
    std::int64_t offset;
    if (paged_) {
      const std::int64_t block = index_at(table_, sequence_index, j / block_size_);
      offset = block * strides_[0] + (j % block_size_) * strides_[1] + h * strides_[2];
    } else {
      offset = (seq.kv_start + j) * strides_[0] + h * strides_[1];
    }
    return base_ + offset * element_;
  }
  std::int64_t d_stride() const { return d_stride_; }
  // Element d of a row is at (d / split) * split_stride + (d % split) * d_stride; split 0: the
  // row is not split (d * d_stride).
  std::int64_t split() const { return split_; }
  std::int64_t split_stride() const { return split_stride_; }
  // Whether element d of a row is at d (what the SIMD kernels read).
  bool row_contiguous() const { return d_stride_ == 1 && (split_ == 0 || split_stride_ == split_); }
  std::int64_t element_offset(std::int64_t d) const {
    return split_ == 0 ? d * d_stride_ : d / split_ * split_stride_ + d % split_ * d_stride_;
  }
  // Element distance between consecutive kv heads of one key.
  std::int64_t head_stride() const { return paged_ ? strides_[2] : strides_[1]; }
  // Element distance between consecutive keys of one block (paged) or the sequence.
  std::int64_t key_stride() const { return paged_ ? strides_[1] : strides_[0]; }
  // Keys from j that are consecutive in memory (the rest of j's block, or all when packed).
  std::int64_t run_length(std::int64_t j, std::int64_t end) const {
    return paged_ ? std::min(end - j, block_size_ - j % block_size_) : end - j;
  }

 private:
  const char* base_;
  std::int64_t element_;
  bool paged_;
  std::int64_t block_size_;
  Tensor table_;
  std::int64_t strides_[5] = {};
  std::int64_t d_stride_ = 1;
  std::int64_t split_ = 0, split_stride_ = 0;
};

}  // namespace tileops::ops::cpu
