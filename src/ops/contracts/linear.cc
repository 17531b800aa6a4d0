#include "tileops/ops/linear.h"

#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "linear";

bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// out must not overlap input, weight or bias (no in-place product); checked on every call, as
// data pointers are not part of the cached geometry.
void check_memory(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& out) {
  const ArgCheck check(kOp);
  check.outputs_do_not_overlap({{input, "input"}, {weight, "weight"}}, {{out, "out"}}, false);
  if (present(bias)) check.outputs_do_not_overlap({{bias, "bias"}}, {{out, "out"}}, false);
}

Problem make_problem(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const Tensor& out) {
  const ArgCheck check(kOp);
  check.usable(input, "input");
  check.usable(weight, "weight");
  check.usable(out, "out");
  check.standard_float(input, "input");
  check.dtype_is(weight, "weight", input.dtype(), "same as 'input'");
  check.dtype_is(out, "out", input.dtype(), "same as 'input'");
  check.rank_at_least(input, "input", 1);
  check.rank_is(weight, "weight", 2);
  const std::int64_t k = input.size(-1);
  const std::int64_t n = weight.size(0);
  check.shape_is(weight, "weight", Dims{n, k}, "[N, K] with K the last dim of input");
  if (present(bias)) {
    check.usable(bias, "bias");
    check.standard_float(bias, "bias");
    check.shape_is(bias, "bias", Dims{n}, "[N], N = weight.size(0)");
  }
  Dims expected = input.shape();
  expected[expected.size() - 1] = n;
  check.shape_is(out, "out", expected, "input's shape with the last dim N");
  check.writable(out, "out");
  check_memory(input, weight, bias, out);
  return Problem{kOp,
                 {TensorDesc::of(input), TensorDesc::of(weight),
                  present(bias) ? TensorDesc::of(bias) : TensorDesc::absent(), TensorDesc::of(out)},
                 {}};
}

}  // namespace

void linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
            const Context& ctx) {
  const Tensor tensors[] = {input, weight, bias, out};
  run_problem(make_problem(input, weight, bias, out), tensors, ctx);
}

Linear::Linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
               int implementation_index)
    : prepared_(make_problem(input, weight, bias, out), {"input", "weight", "bias", "out"},
                implementation_index) {}

void Linear::operator()(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Tensor& out, const Context& ctx) const {
  check_memory(input, weight, bias, out);
  const Tensor tensors[] = {input, weight, bias, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
