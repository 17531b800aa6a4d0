#include "tileops/ops/matmul.h"

#include "src/ops/contracts/matmul_problem.h"
#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "matmul";

Problem make_problem(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a,
                     bool trans_b) {
  check_matrix_product(ArgCheck(kOp), a, "a", trans_a, b, "b", trans_b, c, "c");
  return Problem{kOp,
                 {TensorDesc::of(a), TensorDesc::of(b), TensorDesc::of(c)},
                 {trans_a ? 1.0 : 0.0, trans_b ? 1.0 : 0.0}};
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a, bool trans_b,
            const Context& ctx) {
  const Tensor tensors[] = {a, b, c};
  run_problem(make_problem(a, b, c, trans_a, trans_b), tensors, ctx);
}

Matmul::Matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a, bool trans_b,
               int implementation_index)
    : prepared_(make_problem(a, b, c, trans_a, trans_b), {"a", "b", "c"}, implementation_index) {}

void Matmul::operator()(const Tensor& a, const Tensor& b, const Tensor& c,
                        const Context& ctx) const {
  check_product_memory(kOp, a, b, c);
  const Tensor tensors[] = {a, b, c};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
