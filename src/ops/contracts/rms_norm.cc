#include "tileops/ops/rms_norm.h"

#include <cmath>
#include <string>

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "rms_norm";

// Outputs may alias inputs only as allowed by ArgCheck::outputs_do_not_overlap; checked on every
// call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& weight, const Tensor& out) {
  ArgCheck(kOp).outputs_do_not_overlap({{input, "input"}, {weight, "weight"}}, {{out, "out"}});
}

Problem make_problem(const Tensor& input, const Tensor& weight, double eps, const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(weight, "weight");
  check.usable(out, "out");
  check.standard_float(input, "input");
  check.standard_float(weight, "weight");
  check.dtype_is(out, "out", input.dtype(), "same as input");
  check.rank_at_least(input, "input", 1);
  check.rank_is(weight, "weight", 1);
  check.shape_is(weight, "weight", Dims{input.size(-1)}, "the last dim of input");
  check.shape_is(out, "out", input.shape(), "same as input");
  check.writable(out, "out");
  check_memory(input, weight, out);
  if (!(eps >= 0.0) || !std::isfinite(eps)) {
    check.fail(ErrorKind::kInvalidArgument, "eps", "a finite value >= 0", std::to_string(eps));
  }
  return Problem{kOp, {TensorDesc::of(input), TensorDesc::of(weight), TensorDesc::of(out)}, {eps}};
}

}  // namespace

void rms_norm(const Tensor& input, const Tensor& weight, double eps, const Tensor& out,
              const Context& ctx) {
  const Tensor tensors[] = {input, weight, out};
  run_problem(make_problem(input, weight, eps, out), tensors, ctx);
}

RmsNorm::RmsNorm(const Tensor& input, const Tensor& weight, double eps, const Tensor& out,
                 int implementation_index)
    : prepared_(make_problem(input, weight, eps, out), {"input", "weight", "out"},
                implementation_index) {}

void RmsNorm::operator()(const Tensor& input, const Tensor& weight, const Tensor& out,
                         const Context& ctx) const {
  check_memory(input, weight, out);
  const Tensor tensors[] = {input, weight, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
