#include "tileops/ops/topk_topp_sampling.h"

#include "src/ops/contracts/sampling_problem.h"
#include "src/ops/contracts/topk_topp_sampling.decl.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "topk_topp_sampling";

std::int64_t vocab_of(const Tensor& probs) { return probs.rank() == 2 ? probs.size(1) : 0; }

constexpr SamplingArgs kArgs = sampling_args(decls::topk_topp_sampling, "probs", "topk", "topp");
void check_topk_topp_sampling(const ArgCheck& check, std::span<const Tensor> tensors,
                              std::span<double>) {
  check_sampling(check, tensors, kArgs);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp topk_topp_sampling{decls::topk_topp_sampling,
                                                     {check_topk_topp_sampling}};
}  // namespace contracts

void topk_topp_sampling(const Tensor& probs, std::int64_t topk, double topp, std::uint64_t seed,
                        const Tensor& out, const Context& ctx) {
  const ScalarFilters filters(ArgCheck(kOp), topk, topp, vocab_of(probs), "topp");
  contracts::topk_topp_sampling.call({probs, filters.k, filters.p, seed_tensor(seed), out}, {},
                                     ctx);
}

// The instance keeps k and p: they are attributes of this form, stored in the Problem as
// 1-element tensors whose values are read at run time, so the class holds them itself.
TopkToppSampling::TopkToppSampling(const Tensor& probs, std::int64_t topk, double topp,
                                   const Tensor& out, int implementation_index)
    : prepared_([&] {
        const ScalarFilters filters(ArgCheck(kOp), topk, topp, vocab_of(probs), "topp");
        std::uint64_t seed = 0;
        return contracts::topk_topp_sampling.prepare(
            {probs, filters.k, filters.p, seed_tensor(seed), out}, {}, implementation_index);
      }()),
      topk_(topk),
      topp_(topp) {}

void TopkToppSampling::operator()(const Tensor& probs, std::uint64_t seed, const Tensor& out,
                                  const Context& ctx) const {
  const ScalarFilters filters(ArgCheck(kOp), topk_, topp_, vocab_of(probs), "topp");
  contracts::topk_topp_sampling.run(prepared_,
                                    {probs, filters.k, filters.p, seed_tensor(seed), out}, ctx);
}

}  // namespace tileops::ops
