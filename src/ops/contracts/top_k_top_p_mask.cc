// top_k_top_p_mask beyond its declaration: logits [B, V] and k, p of B or 1 elements (shared with
// the samplers, sampling_problem.h), and every k in [1, V] and every p in (0, 1]. The values are
// data: `check` reads them for a call, `check_data` again for each run of a prepared operator, so
// the kernel meets only valid filters and a bad one writes nothing.
#include <algorithm>
#include <string>

#include "src/ops/contracts/sampling_problem.h"
#include "src/ops/contracts/top_k_top_p_mask.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr SamplingArgs kArgs =
    sampling_args(decls::top_k_top_p_mask, "logits", "k", "p", /*has_out=*/false);

void check_values(const ArgCheck& check, std::span<const Tensor> t) {
  const std::int64_t rows = t[kArgs.weights].size(0);
  const std::int64_t vocab = t[kArgs.weights].size(1);
  const Tensor& k = t[kArgs.k];
  const Tensor& p = t[kArgs.p];
  const std::int64_t k_rows = is_present(k) ? std::min<std::int64_t>(rows, k.numel()) : 0;
  for (std::int64_t r = 0; r < k_rows; ++r) {
    const std::int64_t at = filter_offset(k, r);
    const std::int64_t value = k.dtype() == DataType::kInt64 ? k.data_as<const std::int64_t>()[at]
                                                             : k.data_as<const std::int32_t>()[at];
    if (value < 1 || value > vocab) {
      check.fail(ErrorKind::kInvalidArgument, "k",
                 "values in [1, " + std::to_string(vocab) + "] (V = " + std::to_string(vocab) +
                     ": no top-k mask)",
                 std::to_string(value) + " for row " + std::to_string(r));
    }
  }
  const std::int64_t p_rows = is_present(p) ? std::min<std::int64_t>(rows, p.numel()) : 0;
  for (std::int64_t r = 0; r < p_rows; ++r) {
    const std::int64_t at = filter_offset(p, r);
    const double value = p.dtype() == DataType::kFloat64 ? p.data_as<const double>()[at]
                                                         : p.data_as<const float>()[at];
    if (!(value > 0.0 && value <= 1.0)) {
      check.fail(ErrorKind::kInvalidArgument, "p", "values in (0, 1] (1: no top-p mask)",
                 std::to_string(value) + " for row " + std::to_string(r));
    }
  }
}

void check_mask(const ArgCheck& check, std::span<const Tensor> t, std::span<double>) {
  check_sampling(check, t, kArgs);
  check_values(check, t);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp top_k_top_p_mask{
    decls::top_k_top_p_mask, {.check = check_mask, .check_data = check_values}};
}  // namespace contracts

}  // namespace tileops::ops
