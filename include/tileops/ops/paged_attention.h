// paged_attention: decode attention, one query token per sequence over a paged KV cache.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/flash_attention.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// query [B, H, D]; key_cache/value_cache [num_blocks, block_size, Hkv, D], each also accepted
// with D split in two, [num_blocks, block_size, Hkv, D / x, x] (vLLM's key cache
// [num_blocks, Hkv, D / x, block_size, x] as `.permute(0, 3, 1, 2, 4)`, read in place; vLLM's
// value cache [num_blocks, Hkv, D, block_size] is the 4-D `.permute(0, 3, 1, 2)`); seq_lens [B]
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

// The optional inputs (an undefined Tensor = none): the host mirrors above, and ALiBi slopes,
// float32 [H]: head h's score of key j (of a sequence of n keys) gains
// alibi_slopes[h] * (j - (n - 1)) after the scale, before the softmax (vLLM's ALiBi).
// fp8 caches: key_cache and value_cache may both be float8_e4m3fn or both float8_e5m2 (vLLM's
// kv_cache_dtype "fp8"), read as fp8 · k_scale / fp8 · v_scale in float32 (k_scale, v_scale:
// float32, one element; none: 1); the products run in float32 whatever the query's dtype.
struct PagedAttentionOptions {
  Tensor seq_lens_host, block_table_host;
  Tensor alibi_slopes;
  Tensor k_scale, v_scale;
};
void paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                     const Tensor& seq_lens, const Tensor& block_table,
                     const AttentionAttributes& attrs, const Tensor& output,
                     const PagedAttentionOptions& options, const Context& ctx = {});

class PagedAttention {
 public:
  PagedAttention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                 const Tensor& seq_lens, const Tensor& block_table,
                 const AttentionAttributes& attrs, const Tensor& output,
                 const Tensor& seq_lens_host = {}, const Tensor& block_table_host = {},
                 int implementation_index = 0);
  PagedAttention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                 const Tensor& seq_lens, const Tensor& block_table,
                 const AttentionAttributes& attrs, const Tensor& output,
                 const PagedAttentionOptions& options, int implementation_index = 0);
  void operator()(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                  const Tensor& seq_lens, const Tensor& block_table, const Tensor& output,
                  const Tensor& seq_lens_host = {}, const Tensor& block_table_host = {},
                  const Context& ctx = {}) const;
  void operator()(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                  const Tensor& seq_lens, const Tensor& block_table, const Tensor& output,
                  const PagedAttentionOptions& options, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
