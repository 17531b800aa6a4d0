// matmul's contract beyond its declaration (matmul.decl.h); the typed function and class are
// generated.
#include "src/ops/contracts/matmul.decl.h"
#include "src/ops/contracts/matmul_problem.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attrs) {
  check.shape_is(t[2], "c", product_shape(check, t[0], attrs[0] != 0.0, t[1], attrs[1] != 0.0),
                 "[batch..., M, N]");
}

Dims output_shape(std::string_view op, int /*arg*/, std::span<const Tensor> t,
                  std::span<const double> attrs) {
  return product_output_shape(op, t[0], attrs[0] != 0.0, t[1], attrs[1] != 0.0);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp matmul{
    decls::matmul,
    {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
