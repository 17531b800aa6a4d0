// gemm's contract beyond its declaration (gemm.decl.h); the typed function and class are
// generated.
#include <cmath>
#include <string>

#include "src/ops/contracts/gemm.decl.h"
#include "src/ops/contracts/matmul_problem.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

// Tensors {a, b, c}; attributes {alpha, beta, trans_a, trans_b}.
void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attrs) {
  for (const ArgCheck::Named& x : {ArgCheck::Named{t[0], "a"}, ArgCheck::Named{t[1], "b"}}) {
    if (x.tensor.rank() != 2 && x.tensor.rank() != 3) {
      check.fail(ErrorKind::kInvalidArgument, x.name, "rank 2 or 3 ([M, K] or [batch, M, K])",
                 "rank " + std::to_string(x.tensor.rank()) + " " + x.tensor.describe());
    }
  }
  for (int i : {0, 1}) {
    if (!std::isfinite(attrs[i])) {
      check.fail(ErrorKind::kInvalidArgument, i == 0 ? "alpha" : "beta", "a finite value",
                 std::to_string(attrs[i]));
    }
  }
  check.shape_is(t[2], "c", product_shape(check, t[0], attrs[2] != 0.0, t[1], attrs[3] != 0.0),
                 "[batch..., M, N]");
}

// c's shape, for a binding that allocates it (when beta == 0).
Dims output_shape(std::string_view op, int /*arg*/, std::span<const Tensor> t,
                  std::span<const double> attrs) {
  return product_output_shape(op, t[0], attrs[2] != 0.0, t[1], attrs[3] != 0.0);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp gemm{
    decls::gemm, {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
