#include "tileops/ops/scaled_softmax.h"

#include <cmath>
#include <limits>
#include <string>

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "scaled_softmax";

// Outputs may alias inputs only as allowed by ArgCheck::outputs_do_not_overlap; checked on every
// call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& out) {
  ArgCheck(kOp).outputs_do_not_overlap({{input, "input"}}, {{out, "out"}});
}

Problem make_problem(const Tensor& input, double scale, const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(out, "out");
  check.standard_float(input, "input");
  check.dtype_is(out, "out", input.dtype(), "same as input");
  check.rank_at_least(input, "input", 1);
  check.shape_is(out, "out", input.shape(), "same as input");
  check.writable(out, "out");
  check_memory(input, out);
  // The math is float32, so scale must be finite as a float32 too.
  if (!(std::fabs(scale) <= std::numeric_limits<float>::max())) {
    check.fail(ErrorKind::kInvalidArgument, "scale", "a finite float32 value",
               std::to_string(scale));
  }
  return Problem{kOp, {TensorDesc::of(input), TensorDesc::of(out)}, {scale}};
}

}  // namespace

void scaled_softmax(const Tensor& input, double scale, const Tensor& out, const Context& ctx) {
  const Tensor tensors[] = {input, out};
  run_problem(make_problem(input, scale, out), tensors, ctx);
}

ScaledSoftmax::ScaledSoftmax(const Tensor& input, double scale, const Tensor& out,
                             int implementation_index)
    : prepared_(make_problem(input, scale, out), {"input", "out"}, implementation_index) {}

void ScaledSoftmax::operator()(const Tensor& input, const Tensor& out, const Context& ctx) const {
  check_memory(input, out);
  const Tensor tensors[] = {input, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
