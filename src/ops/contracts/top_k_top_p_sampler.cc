#include "tileops/ops/top_k_top_p_sampler.h"

#include "src/ops/contracts/sampling_problem.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "top_k_top_p_sampler";

Problem make_problem(const Tensor& logits, const Tensor& k, const Tensor& p, const Tensor& seed,
                     const Tensor& out) {
  return make_sampling_problem(kOp, logits, "logits", k, "k", p, "p", seed, out, DataType::kInt64);
}

}  // namespace

void top_k_top_p_sampler(const Tensor& logits, const Tensor& k, const Tensor& p, std::uint64_t seed,
                         const Tensor& out, const Context& ctx) {
  const Tensor tensors[] = {logits, k, p, seed_tensor(seed), out};
  run_problem(make_problem(logits, k, p, tensors[3], out), tensors, ctx);
}

void top_k_top_p_sampler(const Tensor& logits, std::int64_t k, double p, std::uint64_t seed,
                         const Tensor& out, const Context& ctx) {
  const ScalarFilters filters(ArgCheck(kOp), k, p, logits.rank() == 2 ? logits.size(1) : 0, "p");
  top_k_top_p_sampler(logits, filters.k, filters.p, seed, out, ctx);
}

TopKTopPSampler::TopKTopPSampler(const Tensor& logits, const Tensor& k, const Tensor& p,
                                 const Tensor& out, int implementation_index)
    : prepared_(
          [&] {
            std::uint64_t seed = 0;
            return make_problem(logits, k, p, seed_tensor(seed), out);
          }(),
          {"logits", "k", "p", "seed", "out"}, implementation_index) {}

void TopKTopPSampler::operator()(const Tensor& logits, const Tensor& k, const Tensor& p,
                                 std::uint64_t seed, const Tensor& out, const Context& ctx) const {
  check_sampling_memory(kOp, logits, "logits", k, p, out);
  const Tensor tensors[] = {logits, k, p, seed_tensor(seed), out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
