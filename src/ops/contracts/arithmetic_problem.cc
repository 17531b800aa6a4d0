#include "src/ops/contracts/arithmetic_problem.h"

#include "src/ops/framework/arg_check.h"
#include "src/ops/framework/broadcast.h"

namespace tileops::ops {

Problem arithmetic_problem(std::string_view op, const Tensor& input, const Tensor& other,
                           const Tensor& out) {
  const ArgCheck check(op);
  check.usable(input, "input");
  check.usable(other, "other");
  check.usable(out, "out");
  check.dtype_in(input, "input",
                 {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                  DataType::kInt64});
  check.dtype_is(other, "other", input.dtype(), "same as input");
  check.dtype_is(out, "out", input.dtype(), "same as input");
  check_broadcast_operands(check, input, "input", other, "other", out, "out");
  check.writable(out, "out");
  check_arithmetic_memory(op, input, other, out);
  return Problem{op, {TensorDesc::of(input), TensorDesc::of(other), TensorDesc::of(out)}, {}};
}

void check_arithmetic_memory(std::string_view op, const Tensor& input, const Tensor& other,
                             const Tensor& out) {
  ArgCheck(op).outputs_do_not_overlap({{input, "input"}, {other, "other"}}, {{out, "out"}});
}

}  // namespace tileops::ops
