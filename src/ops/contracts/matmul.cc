// matmul's contract beyond its declaration (matmul.decl.h); the typed function and class are
// generated.
#include "src/ops/contracts/matmul.decl.h"
#include "src/ops/contracts/matmul_problem.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr int kA = tensor_index(decls::matmul, "a");
constexpr int kB = tensor_index(decls::matmul, "b");
constexpr int kC = tensor_index(decls::matmul, "c");
constexpr int kTransA = attribute_index(decls::matmul, "trans_a");
constexpr int kTransB = attribute_index(decls::matmul, "trans_b");

void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attrs) {
  check.shape_is(t[kC], "c",
                 product_shape(check, t[kA], attrs[kTransA] != 0.0, t[kB], attrs[kTransB] != 0.0),
                 "[batch..., M, N]");
}

Dims output_shape(std::string_view op, int /*arg*/, std::span<const Tensor> t,
                  std::span<const double> attrs) {
  return product_output_shape(op, t[kA], attrs[kTransA] != 0.0, t[kB], attrs[kTransB] != 0.0);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp matmul{
    decls::matmul,
    {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
