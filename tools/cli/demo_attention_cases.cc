// `tileops demo` cases of the attention operators: causal prefill of one sequence of `tokens`
// tokens (flash_attention, 8 heads over 2 kv heads, head size 128), decode of 16 sequences
// over a paged cache (paged_attention, block size 16, contexts of 512 or 4096 keys), and the
// linear attention of Qwen3-Next (gated_delta_rule: chunked prefill of `tokens` tokens, 2 query
// heads over 4 value heads, K = V = 128; recurrent decode of 16 sequences from a state).
#include <cmath>
#include <cstring>
#include <numeric>

#include "tests/support/reference_attention.h"
#include "tests/support/reference_ops.h"
#include "tileops/ops.h"
#include "tools/cli/demo_case.h"

namespace tileops::cli::demo {

namespace ref = testing::reference;

void append_attention_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                            std::mt19937_64& rng) {
  constexpr std::int64_t kHeads = 8, kKvHeads = 2, kHeadSize = 128, kBlock = 16, kBatch = 16;
  ops::AttentionAttributes attrs;
  attrs.num_heads = kHeads, attrs.num_kv_heads = kKvHeads, attrs.head_size = kHeadSize;
  ref::AttentionSpec spec;
  spec.heads = kHeads, spec.kv_heads = kKvHeads, spec.head_size = kHeadSize;
  spec.scale = 1.0 / std::sqrt(static_cast<double>(kHeadSize));
  const std::string tk = std::to_string(tokens);
  {
    auto q = random({tokens, kHeads, kHeadSize}, dt, rng);
    auto k = random({tokens, kKvHeads, kHeadSize}, dt, rng);
    auto v = random({tokens, kKvHeads, kHeadSize}, dt, rng);
    auto out = empty({tokens, kHeads, kHeadSize}, dt);
    ops::AttentionAttributes causal = attrs;
    causal.causal = true;
    ref::AttentionSpec causal_spec = spec;
    causal_spec.causal = true;
    cases.push_back(
        {"flash_attention", "causal [" + tk + ", 8/2, 128]", dt, bytes_of({q, k, v, out}),
         [=] { ops::flash_attention(*q, *k, *v, {}, {}, {}, causal, *out); }, [=] { return out; },
         [=] {
           return ref::attention(values(q), values(k), values(v), {0, tokens}, {0, tokens},
                                 causal_spec);
         }});
  }
  {
    const std::int64_t context = tokens <= 16 ? 512 : 4096;
    const std::int64_t per_seq = context / kBlock, blocks = kBatch * per_seq;
    auto q = random({kBatch, kHeads, kHeadSize}, dt, rng);
    auto kc = random({blocks, kBlock, kKvHeads, kHeadSize}, dt, rng);
    auto vc = random({blocks, kBlock, kKvHeads, kHeadSize}, dt, rng);
    auto out = empty({kBatch, kHeads, kHeadSize}, dt);
    auto lens = std::make_shared<TensorStorage>(Dims{kBatch}, DataType::kInt32);
    auto table = std::make_shared<TensorStorage>(Dims{kBatch, per_seq}, DataType::kInt32);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::memcpy(table->data(), ids.data(), ids.size() * sizeof(std::int32_t));
    for (std::int64_t b = 0; b < kBatch; ++b) {
      static_cast<std::int32_t*>(lens->data())[b] = static_cast<std::int32_t>(context);
    }
    // The reference reads the cache through the block table into packed keys and values.
    const auto gather = [=](const Storage& cache) {
      const ref::Values all = values(cache);
      const std::int64_t row = kKvHeads * kHeadSize;
      ref::Values packed(static_cast<std::size_t>(kBatch * context * row));
      for (std::int64_t b = 0; b < kBatch; ++b) {
        for (std::int64_t j = 0; j < context; ++j) {
          const std::int64_t slot = ids[b * per_seq + j / kBlock] * kBlock + j % kBlock;
          std::copy(&all[slot * row], &all[slot * row] + row, &packed[(b * context + j) * row]);
        }
      }
      return packed;
    };
    std::vector<std::int64_t> cu_q(kBatch + 1), cu_kv(kBatch + 1);
    for (std::int64_t b = 0; b <= kBatch; ++b) cu_q[b] = b, cu_kv[b] = b * context;
    cases.push_back(
        {"paged_attention", "16 x 1 over " + std::to_string(context) + " keys, 8/2, 128", dt,
         bytes_of({q, kc, vc, out}),
         [=] { ops::paged_attention(*q, *kc, *vc, *lens, *table, attrs, *out); },
         [=] { return out; },
         [=] { return ref::attention(values(q), gather(kc), gather(vc), cu_q, cu_kv, spec); }});
  }
  // gated_delta_rule: log-space decays in [-0.7, 0], beta in [0, 1], l2-normalised q and k.
  for (const bool decode : {false, true}) {
    const std::int64_t b = decode ? 16 : 1, t = decode ? 1 : tokens;
    constexpr std::int64_t kH = 2, kHv = 4, kD = 128;
    auto q = random({b, t, kH, kD}, dt, rng);
    auto k = random({b, t, kH, kD}, dt, rng);
    auto v = random({b, t, kHv, kD}, dt, rng);
    auto g = random({b, t, kHv}, DataType::kFloat32, rng, -0.7, 0);
    auto beta = random({b, t, kHv}, dt, rng, 0, 1);
    auto h0 = decode ? random({b, kHv, kD, kD}, DataType::kFloat32, rng, -0.1, 0.1) : nullptr;
    auto o = empty({b, t, kHv, kD}, dt);
    auto state = empty({b, kHv, kD, kD}, DataType::kFloat32);
    const int chunk = decode ? 0 : 64;
    cases.push_back(
        {"gated_delta_rule",
         decode ? "16 x 1, 2/4 heads, 128, state" : "chunked [" + tk + ", 2/4 heads, 128]", dt,
         bytes_of({q, k, v, g, beta, o, state}) + (h0 ? bytes_of({h0}) : 0.0),
         [=] {
           ops::gated_delta_rule(*q, *k, *v, *g, *beta, 0.0, h0 ? h0->view() : Tensor(), {}, true,
                                 chunk, *o, *state);
         },
         [=] { return o; },
         [=] {
           ref::Values s = h0 ? values(h0) : ref::Values();
           return ref::gated_delta_rule(values(q), values(k), values(v), values(g), values(beta),
                                        {b, t, kH, kHv, kD, kD}, {}, 1.0 / std::sqrt(128.0), true,
                                        s);
         }});
  }
}

}  // namespace tileops::cli::demo
