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

Dims product_shape(const ArgCheck& check, const Tensor& a, bool trans_a, const Tensor& b,
                   bool trans_b) {
  const std::int64_t m = trans_a ? a.size(-1) : a.size(-2);
  const std::int64_t k = trans_a ? a.size(-2) : a.size(-1);
  const std::int64_t b_k = trans_b ? b.size(-1) : b.size(-2);
  const std::int64_t n = trans_b ? b.size(-2) : b.size(-1);
  if (b_k != k) {
    check.fail(
        ErrorKind::kInvalidArgument, "b",
        "K = " + std::to_string(k) + " rows of op(b) to match the columns of op(a) " + a.describe(),
        std::to_string(b_k) + " in " + b.describe());
  }
  const std::optional<Dims> batch = broadcast_shapes(batch_of(a.shape()), batch_of(b.shape()));
  if (!batch) {
    check.fail(ErrorKind::kInvalidArgument, "b",
               "batch dims that broadcast with a's " + batch_of(a.shape()).to_string(),
               batch_of(b.shape()).to_string());
  }
  Dims shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  return shape;
}

Dims product_output_shape(std::string_view op, const Tensor& a, bool trans_a, const Tensor& b,
                          bool trans_b) {
  const ArgCheck check(op);
  for (const ArgCheck::Named& t : {ArgCheck::Named{a, "a"}, ArgCheck::Named{b, "b"}}) {
    if (t.tensor.rank() < 2) {
      check.fail(ErrorKind::kInvalidArgument, t.name, "rank >= 2", t.tensor.shape().to_string());
    }
  }
  return product_shape(check, a, trans_a, b, trans_b);
}

}  // namespace tileops::ops
