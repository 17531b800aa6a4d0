// flash_attention: attention over packed variable-length sequences (prefill), with the keys and
// values either packed like the queries or in a paged KV cache; GQA/MQA, causal and sliding-window
// masks. The full score matrix is never materialised (online softmax over key tiles).
#pragma once

#include <cstdint>
#include <optional>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// Attributes shared by flash_attention and paged_attention.
struct AttentionAttributes {
  std::int64_t num_heads = 0, num_kv_heads = 0, head_size = 0;
  double scale = 0;     // 0 => 1/sqrt(head_size)
  bool causal = false;  // bottom-right aligned when q is shorter than kv (vLLM)
  std::int64_t window_left = -1, window_right = -1;  // -1 = unbounded
  std::int64_t block_size = 0;  // paged KV block size (0: derive from key_cache shape)
  std::optional<std::int64_t> sliding_window;  // w == (w-1, 0); both given must agree
};

// query [Tq, H, D] packed varlen (cu_seqlens_q [B+1], from 0 to Tq). Non-paged (block_table
// undefined): key/value [Tkv, Hkv, D] with cu_seqlens_kv [B+1] (0 to Tkv). Paged: key/value are
// caches [num_blocks, block_size, Hkv, D], block_table [B, max_blocks], cu_seqlens_kv gives the kv
// lengths (cumulative, from 0; undefined: one sequence of max_blocks·block_size keys). cu_seqlens_*
// undefined => one sequence. Each index tensor is int32 or int64, independently of the others;
// values are checked exactly (an int64 beyond int32 is refused as out of range, never truncated).
// output [Tq, H, D]. query, key, value and output share one dtype of {float32, float16,
// bfloat16}; float32 scores, softmax state and accumulation. Query row i of a sequence with
// Lq queries and Lk keys sees key j when j <= i + Lk - Lq (causal), and
// i + Lk - Lq - window_left <= j <= i + Lk - Lq + window_right (for the bounds that are >= 0).
// A row that sees no key gets zeros. Non-finite inputs as softmax(QKᵀ)·V in float64: a NaN or
// +inf among a row's visible scores, or visible scores all -inf, make the row NaN; a NaN or Inf
// in a visible key's value reaches that column (0·Inf included). Any strides; output must not
// overlap the inputs.
void flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                     const Tensor& block_table, const AttentionAttributes& attrs,
                     const Tensor& output, const Context& ctx = {});
// The same, with flash_attn_varlen_func's softmax_lse when softmax_lse is defined (an undefined
// Tensor: nothing extra is computed): float32 [num_heads, Tq], any strides, element (h, t) the
// natural log of Σ exp(s_j) over the keys j query row t of head h sees, s_j = scale·q·k_j (the
// scaled, masked scores, as the output's softmax uses them). A row that sees no key, or whose
// visible scores are all -inf, gets -inf; a NaN or +inf among its visible scores gives NaN.
void flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                     const Tensor& block_table, const AttentionAttributes& attrs,
                     const Tensor& output, const Tensor& softmax_lse, const Context& ctx = {});

class FlashAttention {
 public:
  FlashAttention(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv, const Tensor& block_table,
                 const AttentionAttributes& attrs, const Tensor& output,
                 int implementation_index = 0);
  // With softmax_lse (defined: every call passes one of its geometry; undefined: as above).
  FlashAttention(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv, const Tensor& block_table,
                 const AttentionAttributes& attrs, const Tensor& output, const Tensor& softmax_lse,
                 int implementation_index = 0);
  void operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                  const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                  const Tensor& block_table, const Tensor& output, const Context& ctx = {}) const;
  void operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                  const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                  const Tensor& block_table, const Tensor& output, const Tensor& softmax_lse,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

// flash-attn's mha_varlen_fwd argument list (q, k, v, out, cu_seqlens_q, cu_seqlens_k,
// block_table, max_seqlen_q, max_seqlen_k, softmax_scale, is_causal, window_size_left,
// window_size_right), as a thin adapter over flash_attention (-1 windows: unbounded). The
// max_seqlen values are accepted for compatibility and unused (flash-attn sizes its grid with
// them; here the cumulative lengths say everything).
void mha_varlen_fwd(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                    const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_k,
                    const Tensor& block_table, std::int64_t max_seqlen_q, std::int64_t max_seqlen_k,
                    double softmax_scale, bool is_causal, std::int64_t window_size_left,
                    std::int64_t window_size_right, const Context& ctx = {});

// flash-attn's mha_fwd_kvcache for a paged cache: q [B, Sq, H, D], k_cache/v_cache
// [num_blocks, block_size, Hkv, D], cache_seqlens [B] (keys per sequence, the new ones
// included), block_table [B, max_blocks] (each int32 or int64), out [B, Sq, H, D].
void mha_fwd_kvcache(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const Tensor& cache_seqlens, const Tensor& block_table, const Tensor& out,
                     double softmax_scale, bool is_causal, std::int64_t window_size_left,
                     std::int64_t window_size_right, const Context& ctx = {});

}  // namespace tileops::ops
