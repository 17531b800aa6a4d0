// silu_and_mul: declared (silu_and_mul.decl.h) with the checks below it cannot state; the typed
// function and class are generated.
#include <string>

#include "src/ops/contracts/silu_and_mul.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

// Implementations read dim normalised (>= 0).
void check(const ArgCheck& check, std::span<const Tensor> tensors, std::span<double> attributes) {
  const Tensor& input = tensors[0];
  const int dim = static_cast<int>(attributes[0]);
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
  check.shape_is(tensors[1], "out", half, "input's shape with half its extent along dim");
  attributes[0] = d;
}

// What Python allocates for an omitted out (its messages predate the contract's).
Dims output_shape(std::string_view op, int, std::span<const Tensor> tensors,
                  std::span<const double> attributes) {
  const int dim = static_cast<int>(attributes[0]);
  const int d = normalize_dim(dim, tensors[0].rank());
  if (d < 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "dim",
                         "a dim of a rank-" + std::to_string(tensors[0].rank()) + " tensor",
                         std::to_string(dim));
  }
  Dims shape = tensors[0].shape();
  if (shape[d] % 2 != 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "input",
                         "an even extent along dim " + std::to_string(dim), shape.to_string());
  }
  shape[d] /= 2;
  return shape;
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp silu_and_mul{
    decls::silu_and_mul,
    {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
