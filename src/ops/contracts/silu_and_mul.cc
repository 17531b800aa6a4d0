#include "tileops/ops/silu_and_mul.h"

#include <string>

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "silu_and_mul";

// Outputs may alias inputs only as allowed by ArgCheck::outputs_do_not_overlap; checked on every
// call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& out) {
  ArgCheck(kOp).outputs_do_not_overlap({{input, "input"}}, {{out, "out"}});
}

Problem make_problem(const Tensor& input, int dim, const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(out, "out");
  check.standard_float(input, "input");
  check.dtype_is(out, "out", input.dtype(), "same as input");
  check.rank_at_least(input, "input", 1);
  const int d = normalize_dim(dim, input.rank());
  if (d < 0) {
    check.fail(
        ErrorKind::kInvalidArgument, "dim",
        "a dim in [" + std::to_string(-input.rank()) + ", " + std::to_string(input.rank()) + ")",
        std::to_string(dim));
  }
  if (input.shape()[d] % 2 != 0) {
    check.fail(ErrorKind::kInvalidArgument, "input",
               "an even extent along dim " + std::to_string(dim), input.describe());
  }
  Dims half = input.shape();
  half[d] /= 2;
  check.shape_is(out, "out", half, "input's shape with half its extent along dim");
  check.writable(out, "out");
  check_memory(input, out);
  return Problem{kOp, {TensorDesc::of(input), TensorDesc::of(out)}, {static_cast<double>(d)}};
}

}  // namespace

void silu_and_mul(const Tensor& input, int dim, const Tensor& out, const Context& ctx) {
  const Tensor tensors[] = {input, out};
  run_problem(make_problem(input, dim, out), tensors, ctx);
}

SiluAndMul::SiluAndMul(const Tensor& input, int dim, const Tensor& out, int implementation_index)
    : prepared_(make_problem(input, dim, out), {"input", "out"}, implementation_index) {}

void SiluAndMul::operator()(const Tensor& input, const Tensor& out, const Context& ctx) const {
  check_memory(input, out);
  const Tensor tensors[] = {input, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
