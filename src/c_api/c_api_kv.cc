// The C entry points of the KV-cache, rotary and sampling operators (see c_api.cc for the
// conventions): NULL optional tensors become undefined Tensors.
#include "src/c_api/bridge.h"
#include "tileops/c/tileops.h"
#include "tileops/ops.h"

using tileops::Tensor;
using tileops::c_api::guarded;
using tileops::c_api::optional_tensor;
using tileops::c_api::to_context;
using tileops::c_api::to_tensor;
namespace ops = tileops::ops;

extern "C" {

tileops_status tileops_rotary_embedding(const tileops_tensor* positions,
                                        const tileops_tensor* query, const tileops_tensor* key,
                                        int64_t head_size, const tileops_tensor* cos_sin_cache,
                                        int32_t is_neox_style, int64_t rotary_dim,
                                        const tileops_tensor* query_out,
                                        const tileops_tensor* key_out, const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "rotary_embedding";
    const Tensor pos = to_tensor(kOp, "positions", positions);
    const Tensor q = to_tensor(kOp, "query", query);
    const Tensor k = optional_tensor(kOp, "key", key);
    const Tensor cache = to_tensor(kOp, "cos_sin_cache", cos_sin_cache);
    const Tensor q_out = optional_tensor(kOp, "query_out", query_out);
    const Tensor k_out = optional_tensor(kOp, "key_out", key_out);
    ops::rotary_embedding(pos, q, k, head_size, cache, is_neox_style != 0, rotary_dim, q_out, k_out,
                          to_context(ctx));
  });
}

tileops_status tileops_apply_rotary_pos_emb(const tileops_tensor* query, const tileops_tensor* key,
                                            const tileops_tensor* cos, const tileops_tensor* sin,
                                            int64_t head_size, int32_t is_neox_style,
                                            const tileops_tensor* query_out,
                                            const tileops_tensor* key_out,
                                            const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "apply_rotary_pos_emb";
    const Tensor q = to_tensor(kOp, "query", query);
    const Tensor k = optional_tensor(kOp, "key", key);
    const Tensor c = to_tensor(kOp, "cos", cos);
    const Tensor s = to_tensor(kOp, "sin", sin);
    const Tensor q_out = optional_tensor(kOp, "query_out", query_out);
    const Tensor k_out = optional_tensor(kOp, "key_out", key_out);
    ops::apply_rotary_pos_emb(q, k, c, s, head_size, is_neox_style != 0, q_out, k_out,
                              to_context(ctx));
  });
}

tileops_status tileops_reshape_and_cache(const tileops_tensor* key, const tileops_tensor* value,
                                         const tileops_tensor* key_cache,
                                         const tileops_tensor* value_cache,
                                         const tileops_tensor* slot_mapping,
                                         const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "reshape_and_cache";
    const Tensor k = to_tensor(kOp, "key", key);
    const Tensor v = to_tensor(kOp, "value", value);
    const Tensor kc = to_tensor(kOp, "key_cache", key_cache);
    const Tensor vc = to_tensor(kOp, "value_cache", value_cache);
    const Tensor slots = to_tensor(kOp, "slot_mapping", slot_mapping);
    ops::reshape_and_cache(k, v, kc, vc, slots, to_context(ctx));
  });
}

tileops_status tileops_reshape_and_cache_combined(const tileops_tensor* key,
                                                  const tileops_tensor* value,
                                                  const tileops_tensor* kv_cache,
                                                  const tileops_tensor* slot_mapping,
                                                  const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "reshape_and_cache";
    const Tensor k = to_tensor(kOp, "key", key);
    const Tensor v = to_tensor(kOp, "value", value);
    const Tensor kv = to_tensor(kOp, "kv_cache", kv_cache);
    const Tensor slots = to_tensor(kOp, "slot_mapping", slot_mapping);
    ops::reshape_and_cache(k, v, kv, slots, to_context(ctx));
  });
}

tileops_status tileops_top_k_top_p_sampler(const tileops_tensor* logits, const tileops_tensor* k,
                                           const tileops_tensor* p, uint64_t seed,
                                           const tileops_tensor* out, const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "top_k_top_p_sampler";
    const Tensor x = to_tensor(kOp, "logits", logits);
    const Tensor kt = optional_tensor(kOp, "k", k);
    const Tensor pt = optional_tensor(kOp, "p", p);
    ops::top_k_top_p_sampler(x, kt, pt, seed, to_tensor(kOp, "out", out), to_context(ctx));
  });
}

tileops_status tileops_top_k_top_p_sampler_scalar(const tileops_tensor* logits, int64_t k, double p,
                                                  uint64_t seed, const tileops_tensor* out,
                                                  const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "top_k_top_p_sampler";
    const Tensor x = to_tensor(kOp, "logits", logits);
    ops::top_k_top_p_sampler(x, k, p, seed, to_tensor(kOp, "out", out), to_context(ctx));
  });
}

tileops_status tileops_topk_topp_sampling(const tileops_tensor* probs, int64_t topk, double topp,
                                          uint64_t seed, const tileops_tensor* out,
                                          const tileops_context* ctx) {
  return guarded([&] {
    constexpr std::string_view kOp = "topk_topp_sampling";
    const Tensor x = to_tensor(kOp, "probs", probs);
    ops::topk_topp_sampling(x, topk, topp, seed, to_tensor(kOp, "out", out), to_context(ctx));
  });
}

}  // extern "C"
