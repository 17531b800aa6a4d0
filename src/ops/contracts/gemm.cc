// gemm's contract beyond its declaration (gemm.decl.h); the typed function and class are
// generated.
#include <cmath>
#include <string>

#include "src/ops/contracts/gemm.decl.h"
#include "src/ops/contracts/matmul_problem.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr int kA = tensor_index(decls::gemm, "a");
constexpr int kB = tensor_index(decls::gemm, "b");
constexpr int kC = tensor_index(decls::gemm, "c");
constexpr int kAlpha = attribute_index(decls::gemm, "alpha");
constexpr int kBeta = attribute_index(decls::gemm, "beta");
constexpr int kTransA = attribute_index(decls::gemm, "trans_a");
constexpr int kTransB = attribute_index(decls::gemm, "trans_b");

void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attrs) {
  for (const ArgCheck::Named& x : {ArgCheck::Named{t[kA], "a"}, ArgCheck::Named{t[kB], "b"}}) {
    if (x.tensor.rank() != 2 && x.tensor.rank() != 3) {
      check.fail(ErrorKind::kInvalidArgument, x.name, "rank 2 or 3 ([M, K] or [batch, M, K])",
                 "rank " + std::to_string(x.tensor.rank()) + " " + x.tensor.describe());
    }
  }
  for (int i : {kAlpha, kBeta}) {
    if (!std::isfinite(attrs[i])) {
      check.fail(ErrorKind::kInvalidArgument, i == kAlpha ? "alpha" : "beta", "a finite value",
                 std::to_string(attrs[i]));
    }
  }
  check.shape_is(t[kC], "c",
                 product_shape(check, t[kA], attrs[kTransA] != 0.0, t[kB], attrs[kTransB] != 0.0),
                 "[batch..., M, N]");
}

// c's shape, for a binding that allocates it (when beta == 0).
Dims output_shape(std::string_view op, int /*arg*/, std::span<const Tensor> t,
                  std::span<const double> attrs) {
  return product_output_shape(op, t[kA], attrs[kTransA] != 0.0, t[kB], attrs[kTransB] != 0.0);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp gemm{
    decls::gemm, {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
