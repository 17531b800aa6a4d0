#include "tileops/ops/cast.h"

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "cast";

// Outputs may alias inputs only as allowed by ArgCheck::outputs_do_not_overlap; checked on every
// call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& out) {
  ArgCheck(kOp).outputs_do_not_overlap({{input, "input"}}, {{out, "out"}});
}

// Every dtype pair is valid, so only the geometry and the devices are checked.
Problem make_problem(const Tensor& input, const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(out, "out");
  check.rank_is(out, "out", input.rank());
  check.shape_is(out, "out", input.shape(), "same as input");
  check.writable(out, "out");
  check_memory(input, out);
  return Problem{kOp, {TensorDesc::of(input), TensorDesc::of(out)}, {}};
}

}  // namespace

void cast(const Tensor& input, const Tensor& out, const Context& ctx) {
  const Tensor tensors[] = {input, out};
  run_problem(make_problem(input, out), tensors, ctx);
}

Cast::Cast(const Tensor& input, const Tensor& out, int implementation_index)
    : prepared_(make_problem(input, out), {"input", "out"}, implementation_index) {}

void Cast::operator()(const Tensor& input, const Tensor& out, const Context& ctx) const {
  check_memory(input, out);
  const Tensor tensors[] = {input, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
