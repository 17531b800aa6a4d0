#include "tileops/ops/causal_softmax.h"

#include <string>

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "causal_softmax";

// Outputs may alias inputs only as allowed by ArgCheck::outputs_do_not_overlap; checked on every
// call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& out) {
  ArgCheck(kOp).outputs_do_not_overlap({{input, "input"}}, {{out, "out"}});
}

Problem make_problem(const Tensor& input, const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(out, "out");
  check.standard_float(input, "input");
  check.dtype_is(out, "out", input.dtype(), "same as input");
  if (input.rank() != 2 && input.rank() != 3) {
    check.fail(ErrorKind::kInvalidArgument, "input", "rank 2 [S, T] or 3 [B, S, T]",
               "rank " + std::to_string(input.rank()) + " " + input.describe());
  }
  if (input.size(-1) < input.size(-2)) {
    check.fail(ErrorKind::kInvalidArgument, "input", "T >= S (last dim at least the one before)",
               input.shape().to_string());
  }
  check.shape_is(out, "out", input.shape(), "same as input");
  check.writable(out, "out");
  check_memory(input, out);
  return Problem{kOp, {TensorDesc::of(input), TensorDesc::of(out)}, {}};
}

}  // namespace

void causal_softmax(const Tensor& input, const Tensor& out, const Context& ctx) {
  const Tensor tensors[] = {input, out};
  run_problem(make_problem(input, out), tensors, ctx);
}

CausalSoftmax::CausalSoftmax(const Tensor& input, const Tensor& out, int implementation_index)
    : prepared_(make_problem(input, out), {"input", "out"}, implementation_index) {}

void CausalSoftmax::operator()(const Tensor& input, const Tensor& out, const Context& ctx) const {
  check_memory(input, out);
  const Tensor tensors[] = {input, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
