#include "tileops/ops/add_rms_norm.h"

#include <cmath>
#include <string>

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "add_rms_norm";

// The in-place form names its outputs after the inputs it writes into.
struct OutputNames {
  std::string_view out = "out";
  std::string_view residual_out = "residual_out";
};

// Outputs may be exactly an input's view (the in-place form) and must not overlap each other or
// the weight; checked on every call, as data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& residual, const Tensor& weight,
                  const Tensor& out, const Tensor& residual_out, OutputNames names = {}) {
  ArgCheck(kOp).outputs_do_not_overlap(
      {{input, "input"}, {residual, "residual"}, {weight, "weight"}},
      {{out, names.out}, {residual_out, names.residual_out}});
}

Problem make_problem(const Tensor& input, const Tensor& residual, const Tensor& weight, double eps,
                     const Tensor& out, const Tensor& residual_out, OutputNames names = {}) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(residual, "residual");
  check.usable(weight, "weight");
  check.usable(out, names.out);
  check.usable(residual_out, names.residual_out);
  check.standard_float(input, "input");
  check.dtype_is(residual, "residual", input.dtype(), "same as input");
  check.standard_float(weight, "weight");
  check.dtype_is(out, names.out, input.dtype(), "same as input");
  check.dtype_is(residual_out, names.residual_out, input.dtype(), "same as input");
  check.rank_at_least(input, "input", 1);
  check.shape_is(residual, "residual", input.shape(), "same as input");
  check.rank_is(weight, "weight", 1);
  check.shape_is(weight, "weight", Dims{input.size(-1)}, "the last dim of input");
  check.shape_is(out, names.out, input.shape(), "same as input");
  check.shape_is(residual_out, names.residual_out, input.shape(), "same as input");
  check.writable(out, names.out);
  check.writable(residual_out, names.residual_out);
  check_memory(input, residual, weight, out, residual_out, names);
  if (!(eps >= 0.0) || !std::isfinite(eps)) {
    check.fail(ErrorKind::kInvalidArgument, "eps", "a finite value >= 0", std::to_string(eps));
  }
  return Problem{kOp,
                 {TensorDesc::of(input), TensorDesc::of(residual), TensorDesc::of(weight),
                  TensorDesc::of(out), TensorDesc::of(residual_out)},
                 {eps}};
}

}  // namespace

void add_rms_norm(const Tensor& input, const Tensor& residual, const Tensor& weight, double eps,
                  const Tensor& out, const Tensor& residual_out, const Context& ctx) {
  const Tensor tensors[] = {input, residual, weight, out, residual_out};
  run_problem(make_problem(input, residual, weight, eps, out, residual_out), tensors, ctx);
}

void add_rms_norm_inplace(const Tensor& input, const Tensor& residual, const Tensor& weight,
                          double eps, const Context& ctx) {
  const Tensor tensors[] = {input, residual, weight, input, residual};
  run_problem(make_problem(input, residual, weight, eps, input, residual, {"input", "residual"}),
              tensors, ctx);
}

AddRmsNorm::AddRmsNorm(const Tensor& input, const Tensor& residual, const Tensor& weight,
                       double eps, const Tensor& out, const Tensor& residual_out,
                       int implementation_index)
    : prepared_(make_problem(input, residual, weight, eps, out, residual_out),
                {"input", "residual", "weight", "out", "residual_out"}, implementation_index) {}

void AddRmsNorm::operator()(const Tensor& input, const Tensor& residual, const Tensor& weight,
                            const Tensor& out, const Tensor& residual_out,
                            const Context& ctx) const {
  check_memory(input, residual, weight, out, residual_out);
  const Tensor tensors[] = {input, residual, weight, out, residual_out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
