#include "tileops/ops/swiglu.h"

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "swiglu";

// Outputs may alias inputs only as allowed by ArgCheck::outputs_do_not_overlap; checked on every
// call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& gate, const Tensor& out) {
  ArgCheck(kOp).outputs_do_not_overlap({{input, "input"}, {gate, "gate"}}, {{out, "out"}});
}

Problem make_problem(const Tensor& input, const Tensor& gate, const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(gate, "gate");
  check.usable(out, "out");
  check.standard_float(input, "input");
  check.dtype_is(gate, "gate", input.dtype(), "same as input");
  check.dtype_is(out, "out", input.dtype(), "same as input");
  check.shape_is(gate, "gate", input.shape(), "same as input");
  check.shape_is(out, "out", input.shape(), "same as input");
  check.writable(out, "out");
  check_memory(input, gate, out);
  return Problem{kOp, {TensorDesc::of(input), TensorDesc::of(gate), TensorDesc::of(out)}, {}};
}

}  // namespace

void swiglu(const Tensor& input, const Tensor& gate, const Tensor& out, const Context& ctx) {
  const Tensor tensors[] = {input, gate, out};
  run_problem(make_problem(input, gate, out), tensors, ctx);
}

Swiglu::Swiglu(const Tensor& input, const Tensor& gate, const Tensor& out, int implementation_index)
    : prepared_(make_problem(input, gate, out), {"input", "gate", "out"}, implementation_index) {}

void Swiglu::operator()(const Tensor& input, const Tensor& gate, const Tensor& out,
                        const Context& ctx) const {
  check_memory(input, gate, out);
  const Tensor tensors[] = {input, gate, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
