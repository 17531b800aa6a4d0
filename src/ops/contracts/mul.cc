#include "tileops/ops/mul.h"

#include "src/ops/contracts/arithmetic_problem.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "mul";

}  // namespace

void mul(const Tensor& input, const Tensor& other, const Tensor& out, const Context& ctx) {
  const Tensor tensors[] = {input, other, out};
  run_problem(arithmetic_problem(kOp, input, other, out), tensors, ctx);
}

Mul::Mul(const Tensor& input, const Tensor& other, const Tensor& out, int implementation_index)
    : prepared_(arithmetic_problem(kOp, input, other, out), {"input", "other", "out"},
                implementation_index) {}

void Mul::operator()(const Tensor& input, const Tensor& other, const Tensor& out,
                     const Context& ctx) const {
  check_arithmetic_memory(kOp, input, other, out);
  const Tensor tensors[] = {input, other, out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
