#include "tileops/ops/gemm.h"

#include <cmath>
#include <string>

#include "src/ops/contracts/matmul_problem.h"
#include "src/ops/framework/arg_check.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "gemm";

void check_rank_2_or_3(const ArgCheck& check, const Tensor& t, std::string_view arg) {
  if (t.rank() != 2 && t.rank() != 3) {
    check.fail(ErrorKind::kInvalidArgument, arg, "rank 2 or 3 ([M, K] or [batch, M, K])",
               "rank " + std::to_string(t.rank()) + " " + t.describe());
  }
}

void check_finite(const ArgCheck& check, double value, std::string_view arg) {
  if (!std::isfinite(value)) {
    check.fail(ErrorKind::kInvalidArgument, arg, "a finite value", std::to_string(value));
  }
}

Problem make_problem(const Tensor& a, const Tensor& b, double alpha, double beta, bool trans_a,
                     bool trans_b, const Tensor& c) {
  const ArgCheck check(kOp);
  check.usable(a, "a");
  check.usable(b, "b");
  check.usable(c, "c");
  check_rank_2_or_3(check, a, "a");
  check_rank_2_or_3(check, b, "b");
  check_finite(check, alpha, "alpha");
  check_finite(check, beta, "beta");
  check_matrix_product(check, a, "a", trans_a, b, "b", trans_b, c, "c");
  return Problem{kOp,
                 {TensorDesc::of(a), TensorDesc::of(b), TensorDesc::of(c)},
                 {alpha, beta, trans_a ? 1.0 : 0.0, trans_b ? 1.0 : 0.0}};
}

}  // namespace

void gemm(const Tensor& a, const Tensor& b, double alpha, double beta, bool trans_a, bool trans_b,
          const Tensor& c, const Context& ctx) {
  const Tensor tensors[] = {a, b, c};
  run_problem(make_problem(a, b, alpha, beta, trans_a, trans_b, c), tensors, ctx);
}

Gemm::Gemm(const Tensor& a, const Tensor& b, double alpha, double beta, bool trans_a, bool trans_b,
           const Tensor& c, int implementation_index)
    : prepared_(make_problem(a, b, alpha, beta, trans_a, trans_b, c), {"a", "b", "c"},
                implementation_index) {}

void Gemm::operator()(const Tensor& a, const Tensor& b, const Tensor& c, const Context& ctx) const {
  check_product_memory(kOp, a, b, c);
  const Tensor tensors[] = {a, b, c};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
