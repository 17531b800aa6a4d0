#include "src/ops/contracts/sampling_problem.h"

#include <string>

#include "src/ops/contracts/top_k_top_p_sampler.decl.h"
#include "src/ops/contracts/topk_topp_sampling.decl.h"

namespace tileops::ops {

ScalarFilters::ScalarFilters(const ArgCheck& check, std::int64_t k, double p, std::int64_t vocab,
                             std::string_view p_arg)
    : k_value(k), p_value(p) {
  if (!(p > 0.0)) {
    check.fail(ErrorKind::kInvalidArgument, p_arg, "> 0 (>= 1: no top-p filter)",
               std::to_string(p));
  }
  if (k > 0 && k < vocab) this->k = Tensor(&k_value, Dims{1}, DataType::kInt64);
  if (p < 1.0) this->p = Tensor(&p_value, Dims{1}, DataType::kFloat64);
}

template <const OpDecl* decl>
void check_sampling(const ArgCheck& check, std::span<const Tensor> t,
                    std::span<double> /*attributes*/) {
  const std::string_view weights_arg = decl->args[0].name;
  const std::int64_t rows = t[0].size(0);
  const std::int64_t vocab = t[0].size(1);
  if (vocab < 1 || vocab > 0x7fffffff) {
    check.fail(ErrorKind::kInvalidArgument, weights_arg, "[B, V] with 1 <= V < 2^31",
               t[0].shape().to_string());
  }
  for (int i : {1, 2}) {
    const Tensor& f = t[i];
    const bool present = f.data() != nullptr || f.rank() != 0;
    if (present && (f.rank() > 1 || (f.numel() != rows && f.numel() != 1))) {
      check.fail(
          ErrorKind::kInvalidArgument, decl->args[i].name,
          "none, or a rank-0/1 tensor of " + std::to_string(rows) + " (one per row) or 1 element",
          f.shape().to_string());
    }
  }
  check.shape_is(t[4], "out", Dims{rows}, "[B], one token per row of " + std::string(weights_arg));
}

template void check_sampling<&decls::top_k_top_p_sampler>(const ArgCheck&, std::span<const Tensor>,
                                                          std::span<double>);
template void check_sampling<&decls::topk_topp_sampling>(const ArgCheck&, std::span<const Tensor>,
                                                         std::span<double>);

}  // namespace tileops::ops
