// The hand-written C entries of the KV-cache and sampling operators (the others are generated
// from their declarations): the combined-cache form and the samplers, whose uint64 seed and
// scalar k/p a declaration cannot state. NULL optional tensors become undefined Tensors.
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
