#include "src/ops/contracts/sampling_problem.h"

#include <cmath>
#include <string>

#include "src/ops/contracts/rotary_problem.h"

namespace tileops::ops {
namespace {

void check_per_row(const ArgCheck& check, const Tensor& t, std::string_view arg,
                   std::initializer_list<DataType> dtypes, std::int64_t rows) {
  if (!present(t)) return;
  check.usable(t, arg);
  check.dtype_in(t, arg, dtypes);
  if (t.rank() > 1 || (t.numel() != rows && t.numel() != 1)) {
    check.fail(ErrorKind::kInvalidArgument, arg,
               "none, or a rank-0/1 tensor of " + std::to_string(rows) +
                   " (one per row) or 1 "
                   "element",
               t.shape().to_string());
  }
}

}  // namespace

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

void check_sampling_memory(std::string_view op, const Tensor& weights, std::string_view weights_arg,
                           const Tensor& k, const Tensor& p, const Tensor& out) {
  const ArgCheck check(op);
  check.outputs_do_not_overlap({{weights, weights_arg}}, {{out, "out"}}, false);
  if (present(k)) check.outputs_do_not_overlap({{k, "k"}}, {{out, "out"}}, false);
  if (present(p)) check.outputs_do_not_overlap({{p, "p"}}, {{out, "out"}}, false);
}

Problem make_sampling_problem(std::string_view op, const Tensor& weights,
                              std::string_view weights_arg, const Tensor& k, std::string_view k_arg,
                              const Tensor& p, std::string_view p_arg, const Tensor& seed,
                              const Tensor& out, DataType out_dtype) {
  const ArgCheck check(op);
  check.usable(weights, weights_arg);
  check.standard_float(weights, weights_arg);
  check.rank_is(weights, weights_arg, 2);
  const std::int64_t rows = weights.size(0);
  const std::int64_t vocab = weights.size(1);
  if (vocab < 1 || vocab > 0x7fffffff) {
    check.fail(ErrorKind::kInvalidArgument, weights_arg, "[B, V] with 1 <= V < 2^31",
               weights.shape().to_string());
  }
  check_per_row(check, k, k_arg, {DataType::kInt32, DataType::kInt64}, rows);
  check_per_row(check, p, p_arg, {DataType::kFloat32, DataType::kFloat64}, rows);
  check.usable(out, "out");
  check.dtype_is(out, "out", out_dtype);
  check.shape_is(out, "out", Dims{rows}, "[B], one token per row of " + std::string(weights_arg));
  check.writable(out, "out");
  check_sampling_memory(op, weights, weights_arg, k, p, out);
  return Problem{op,
                 {TensorDesc::of(weights), present(k) ? TensorDesc::of(k) : TensorDesc::absent(),
                  present(p) ? TensorDesc::of(p) : TensorDesc::absent(), TensorDesc::of(seed),
                  TensorDesc::of(out)},
                 {}};
}

}  // namespace tileops::ops
