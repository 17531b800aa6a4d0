#include "tileops/ops/top_k_top_p_sampler.h"

#include "src/ops/contracts/sampling_problem.h"
#include "src/ops/contracts/top_k_top_p_sampler.decl.h"

namespace tileops::ops {

namespace {

constexpr SamplingArgs kArgs = sampling_args(decls::top_k_top_p_sampler, "logits", "k", "p");
void check_top_k_top_p_sampler(const ArgCheck& check, std::span<const Tensor> tensors,
                               std::span<double>) {
  check_sampling(check, tensors, kArgs);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp top_k_top_p_sampler{decls::top_k_top_p_sampler,
                                                      {check_top_k_top_p_sampler}};
}  // namespace contracts

void top_k_top_p_sampler(const Tensor& logits, const Tensor& k, const Tensor& p, std::uint64_t seed,
                         const Tensor& out, const Context& ctx) {
  contracts::top_k_top_p_sampler.call({logits, k, p, seed_tensor(seed), out}, {}, ctx);
}

void top_k_top_p_sampler(const Tensor& logits, std::int64_t k, double p, std::uint64_t seed,
                         const Tensor& out, const Context& ctx) {
  const ScalarFilters filters(ArgCheck("top_k_top_p_sampler"), k, p,
                              logits.rank() == 2 ? logits.size(1) : 0, "p");
  top_k_top_p_sampler(logits, filters.k, filters.p, seed, out, ctx);
}

TopKTopPSampler::TopKTopPSampler(const Tensor& logits, const Tensor& k, const Tensor& p,
                                 const Tensor& out, int implementation_index)
    : prepared_([&] {
        std::uint64_t seed = 0;
        return contracts::top_k_top_p_sampler.prepare({logits, k, p, seed_tensor(seed), out}, {},
                                                      implementation_index);
      }()) {}

void TopKTopPSampler::operator()(const Tensor& logits, const Tensor& k, const Tensor& p,
                                 std::uint64_t seed, const Tensor& out, const Context& ctx) const {
  contracts::top_k_top_p_sampler.run(prepared_, {logits, k, p, seed_tensor(seed), out}, ctx);
}

}  // namespace tileops::ops
