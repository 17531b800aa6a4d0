#include "src/ops/contracts/sampling_problem.h"

#include <string>
#include <utility>

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

void check_sampling(const ArgCheck& check, std::span<const Tensor> t, const SamplingArgs& args) {
  const Tensor& weights = t[args.weights];
  const std::int64_t rows = weights.size(0);
  const std::int64_t vocab = weights.size(1);
  if (vocab < 1 || vocab > 0x7fffffff) {
    check.fail(ErrorKind::kInvalidArgument, args.weights_name, "[B, V] with 1 <= V < 2^31",
               weights.shape().to_string());
  }
  for (auto [i, name] : {std::pair{args.k, args.k_name}, std::pair{args.p, args.p_name}}) {
    const Tensor& f = t[i];
    if (is_present(f) && (f.rank() > 1 || (f.numel() != rows && f.numel() != 1))) {
      check.fail(
          ErrorKind::kInvalidArgument, name,
          "none, or a rank-0/1 tensor of " + std::to_string(rows) + " (one per row) or 1 element",
          f.shape().to_string());
    }
  }
  if (args.out >= 0) {
    check.shape_is(t[args.out], "out", Dims{rows},
                   "[B], one token per row of " + std::string(args.weights_name));
  }
}

}  // namespace tileops::ops
