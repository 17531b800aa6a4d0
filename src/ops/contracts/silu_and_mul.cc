// silu_and_mul: declared (silu_and_mul.decl.h) with the checks below it cannot state; the typed
// function and class are generated.
#include <string>

#include "src/ops/contracts/silu_and_mul.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/silu_and_mul.decl.h).
constexpr int kInput = tensor_index(decls::silu_and_mul, "input");
constexpr int kOut = tensor_index(decls::silu_and_mul, "out");
constexpr int kDim = attribute_index(decls::silu_and_mul, "dim");

// Implementations read dim normalised (>= 0).
void check(const ArgCheck& check, std::span<const Tensor> tensors, std::span<double> attributes) {
  const Tensor& input = tensors[kInput];
  const int dim = static_cast<int>(attributes[kDim]);
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
  check.shape_is(tensors[kOut], "out", half, "input's shape with half its extent along dim");
  attributes[kDim] = d;
}

// What Python allocates for an omitted out (its messages predate the contract's).
Dims output_shape(std::string_view op, int, std::span<const Tensor> tensors,
                  std::span<const double> attributes) {
  const int dim = static_cast<int>(attributes[kDim]);
  const int d = normalize_dim(dim, tensors[kInput].rank());
  if (d < 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "dim",
                         "a dim of a rank-" + std::to_string(tensors[kInput].rank()) + " tensor",
                         std::to_string(dim));
  }
  Dims shape = tensors[kInput].shape();
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
