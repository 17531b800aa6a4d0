// paged_attention: decode attention, one query token per sequence over a paged KV cache.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/flash_attention.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// query [B, H, D]; key_cache/value_cache [num_blocks, block_size, Hkv, D]; seq_lens [B]
// (keys per sequence, each in [0, max_blocks·block_size]); block_table [B, max_blocks]; each
// index tensor int32 or int64, independently (their values are checked exactly);
// output [B, H, D]. seq_lens_host / block_table_host: optional host mirrors of the same shape and
// values (an undefined Tensor = none; on the CPU they are read instead of the device tensors).
// The query sees every key of its sequence (attrs.causal is accepted and changes nothing; the
// windows count back from the last key). A sequence of length 0 gets zeros; NaN and Inf as in
// flash_attention (a NaN score or an all-NaN cache gives NaN, not zeros). Long contexts over
// few sequences are split over threads (split-KV) and merged by log-sum-exp. query, caches and
// output share one float dtype; float32 softmax state.
void paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                     const Tensor& seq_lens, const Tensor& block_table,
                     const AttentionAttributes& attrs, const Tensor& output,
                     const Tensor& seq_lens_host = {}, const Tensor& block_table_host = {},
                     const Context& ctx = {});

class PagedAttention {
 public:
  PagedAttention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                 const Tensor& seq_lens, const Tensor& block_table,
                 const AttentionAttributes& attrs, const Tensor& output,
                 const Tensor& seq_lens_host = {}, const Tensor& block_table_host = {},
                 int implementation_index = 0);
  void operator()(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                  const Tensor& seq_lens, const Tensor& block_table, const Tensor& output,
                  const Tensor& seq_lens_host = {}, const Tensor& block_table_host = {},
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
