#include "tileops/ops/topk_topp_sampling.h"

#include "src/ops/contracts/sampling_problem.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "topk_topp_sampling";

Problem make_problem(const Tensor& probs, const ScalarFilters& filters, const Tensor& seed,
                     const Tensor& out) {
  return make_sampling_problem(kOp, probs, "probs", filters.k, "topk", filters.p, "topp", seed, out,
                               DataType::kInt32);
}

std::int64_t vocab_of(const Tensor& probs) { return probs.rank() == 2 ? probs.size(1) : 0; }

}  // namespace

void topk_topp_sampling(const Tensor& probs, std::int64_t topk, double topp, std::uint64_t seed,
                        const Tensor& out, const Context& ctx) {
  const ScalarFilters filters(ArgCheck(kOp), topk, topp, vocab_of(probs), "topp");
  const Tensor tensors[] = {probs, filters.k, filters.p, seed_tensor(seed), out};
  run_problem(make_problem(probs, filters, tensors[3], out), tensors, ctx);
}

// The instance keeps k and p: they are attributes of this form, stored in the Problem as
// 1-element tensors whose values are read at run time, so the class holds them itself.
TopkToppSampling::TopkToppSampling(const Tensor& probs, std::int64_t topk, double topp,
                                   const Tensor& out, int implementation_index)
    : prepared_(
          [&] {
            const ScalarFilters filters(ArgCheck(kOp), topk, topp, vocab_of(probs), "topp");
            std::uint64_t seed = 0;
            return make_problem(probs, filters, seed_tensor(seed), out);
          }(),
          {"probs", "topk", "topp", "seed", "out"}, implementation_index),
      topk_(topk),
      topp_(topp) {}

void TopkToppSampling::operator()(const Tensor& probs, std::uint64_t seed, const Tensor& out,
                                  const Context& ctx) const {
  const ScalarFilters filters(ArgCheck(kOp), topk_, topp_, vocab_of(probs), "topp");
  check_sampling_memory(kOp, probs, "probs", filters.k, filters.p, out);
  const Tensor tensors[] = {probs, filters.k, filters.p, seed_tensor(seed), out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
