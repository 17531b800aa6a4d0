// The C entry points of flash_attention and paged_attention, hand-written (their declarations
// say so): the attributes come as a plain struct (sliding_window 0 = none); optional tensors are
// NULL. The declared operators validate everything else.
#include "src/c_api/bridge.h"
#include "tileops/c/tileops.h"
#include "tileops/ops.h"

using tileops::Tensor;
using tileops::c_api::guarded;
using tileops::c_api::optional_tensor;
using tileops::c_api::to_context;
using tileops::c_api::to_tensor;
namespace ops = tileops::ops;

namespace {

ops::AttentionAttributes to_attributes(std::string_view op,
                                       const tileops_attention_attributes* attrs) {
  if (attrs == nullptr) {
    tileops::throw_argument_error(tileops::ErrorKind::kInvalidArgument, op, "attrs",
                                  "a tileops_attention_attributes", "NULL");
  }
  ops::AttentionAttributes a;
  a.num_heads = attrs->num_heads, a.num_kv_heads = attrs->num_kv_heads;
  a.head_size = attrs->head_size, a.scale = attrs->scale, a.causal = attrs->causal != 0;
  a.window_left = attrs->window_left, a.window_right = attrs->window_right;
  a.block_size = attrs->block_size;
  if (attrs->sliding_window != 0) a.sliding_window = attrs->sliding_window;
  return a;
}

}  // namespace

extern "C" {

tileops_status tileops_flash_attention(const tileops_tensor* query, const tileops_tensor* key,
                                       const tileops_tensor* value,
                                       const tileops_tensor* cu_seqlens_q,
                                       const tileops_tensor* cu_seqlens_kv,
                                       const tileops_tensor* block_table,
                                       const tileops_attention_attributes* attrs,
                                       const tileops_tensor* output, const tileops_context* ctx) {
  return tileops_flash_attention_with_lse(query, key, value, cu_seqlens_q, cu_seqlens_kv,
                                          block_table, attrs, output, nullptr, ctx);
}

tileops_status tileops_flash_attention_with_lse(
    const tileops_tensor* query, const tileops_tensor* key, const tileops_tensor* value,
    const tileops_tensor* cu_seqlens_q, const tileops_tensor* cu_seqlens_kv,
    const tileops_tensor* block_table, const tileops_attention_attributes* attrs,
    const tileops_tensor* output, const tileops_tensor* softmax_lse, const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "flash_attention";
    const Tensor q = to_tensor(kOp, "query", query);
    const Tensor k = to_tensor(kOp, "key", key);
    const Tensor v = to_tensor(kOp, "value", value);
    const Tensor cq = optional_tensor(kOp, "cu_seqlens_q", cu_seqlens_q);
    const Tensor ck = optional_tensor(kOp, "cu_seqlens_kv", cu_seqlens_kv);
    const Tensor table = optional_tensor(kOp, "block_table", block_table);
    const ops::AttentionAttributes a = to_attributes(kOp, attrs);
    ops::flash_attention(q, k, v, cq, ck, table, a, to_tensor(kOp, "output", output),
                         optional_tensor(kOp, "softmax_lse", softmax_lse), to_context(ctx));
  });
}

tileops_status tileops_paged_attention(
    const tileops_tensor* query, const tileops_tensor* key_cache, const tileops_tensor* value_cache,
    const tileops_tensor* seq_lens, const tileops_tensor* block_table,
    const tileops_attention_attributes* attrs, const tileops_tensor* output,
    const tileops_tensor* seq_lens_host, const tileops_tensor* block_table_host,
    const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "paged_attention";
    const Tensor q = to_tensor(kOp, "query", query);
    const Tensor kc = to_tensor(kOp, "key_cache", key_cache);
    const Tensor vc = to_tensor(kOp, "value_cache", value_cache);
    const Tensor lens = to_tensor(kOp, "seq_lens", seq_lens);
    const Tensor table = to_tensor(kOp, "block_table", block_table);
    const ops::AttentionAttributes a = to_attributes(kOp, attrs);
    const Tensor out = to_tensor(kOp, "output", output);
    ops::paged_attention(
        q, kc, vc, lens, table, a, out, optional_tensor(kOp, "seq_lens_host", seq_lens_host),
        optional_tensor(kOp, "block_table_host", block_table_host), to_context(ctx));
  });
}

tileops_status tileops_paged_attention_with_options(
    const tileops_tensor* query, const tileops_tensor* key_cache, const tileops_tensor* value_cache,
    const tileops_tensor* seq_lens, const tileops_tensor* block_table,
    const tileops_attention_attributes* attrs, const tileops_tensor* output,
    const tileops_paged_attention_options* options, const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "paged_attention";
    const Tensor q = to_tensor(kOp, "query", query);
    const Tensor kc = to_tensor(kOp, "key_cache", key_cache);
    const Tensor vc = to_tensor(kOp, "value_cache", value_cache);
    const Tensor lens = to_tensor(kOp, "seq_lens", seq_lens);
    const Tensor table = to_tensor(kOp, "block_table", block_table);
    const ops::AttentionAttributes a = to_attributes(kOp, attrs);
    const Tensor out = to_tensor(kOp, "output", output);
    ops::PagedAttentionOptions o;
    if (options != nullptr) {
      o.seq_lens_host = optional_tensor(kOp, "seq_lens_host", options->seq_lens_host);
      o.block_table_host = optional_tensor(kOp, "block_table_host", options->block_table_host);
      o.alibi_slopes = optional_tensor(kOp, "alibi_slopes", options->alibi_slopes);
      o.k_scale = optional_tensor(kOp, "k_scale", options->k_scale);
      o.v_scale = optional_tensor(kOp, "v_scale", options->v_scale);
    }
    ops::paged_attention(q, kc, vc, lens, table, a, out, o, to_context(ctx));
  });
}

}  // extern "C"
