#include "src/ops/contracts/matmul_problem.h"

#include <string>

#include "src/ops/framework/broadcast.h"

namespace tileops::ops {
namespace {

Dims batch_of(const Dims& shape) {
  Dims out;
  for (int i = 0; i + 2 < shape.size(); ++i) out.push_back(shape[i]);
  return out;
}

}  // namespace

void check_matrix_product(const ArgCheck& check, const Tensor& a, std::string_view a_arg,
                          bool trans_a, const Tensor& b, std::string_view b_arg, bool trans_b,
                          const Tensor& c, std::string_view c_arg) {
  check.usable(a, a_arg);
  check.usable(b, b_arg);
  check.usable(c, c_arg);
  check.standard_float(a, a_arg);
  check.dtype_is(b, b_arg, a.dtype(), "same as '" + std::string(a_arg) + "'");
  check.dtype_is(c, c_arg, a.dtype(), "same as '" + std::string(a_arg) + "'");
  check.rank_at_least(a, a_arg, 2);
  check.rank_at_least(b, b_arg, 2);
  const std::int64_t m = trans_a ? a.size(-1) : a.size(-2);
  const std::int64_t k = trans_a ? a.size(-2) : a.size(-1);
  const std::int64_t b_k = trans_b ? b.size(-1) : b.size(-2);
  const std::int64_t n = trans_b ? b.size(-2) : b.size(-1);
  if (b_k != k) {
    check.fail(ErrorKind::kInvalidArgument, b_arg,
               "K = " + std::to_string(k) + " rows of op(" + std::string(b_arg) +
                   ") to match the columns of op(" + std::string(a_arg) + ") " + a.describe(),
               std::to_string(b_k) + " in " + b.describe());
  }
  const std::optional<Dims> batch = broadcast_shapes(batch_of(a.shape()), batch_of(b.shape()));
  if (!batch) {
    check.fail(ErrorKind::kInvalidArgument, b_arg,
               "batch dims that broadcast with " + std::string(a_arg) + "'s " +
                   batch_of(a.shape()).to_string(),
               batch_of(b.shape()).to_string());
  }
  Dims expected = *batch;
  expected.push_back(m);
  expected.push_back(n);
  check.shape_is(c, c_arg, expected, "[batch..., M, N]");
  check.writable(c, c_arg);
  check.outputs_do_not_overlap({{a, a_arg}, {b, b_arg}}, {{c, c_arg}}, false);
}

void check_product_memory(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& c) {
  ArgCheck(op).outputs_do_not_overlap({{a, "a"}, {b, "b"}}, {{c, "c"}}, false);
}

}  // namespace tileops::ops
