// causal_softmax: declared (causal_softmax.decl.h) with the checks below it cannot state; the typed
// function and class are generated.
#include <string>

#include "src/ops/contracts/causal_softmax.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/causal_softmax.decl.h).
constexpr int kInput = tensor_index(decls::causal_softmax, "input");
constexpr int kOut = tensor_index(decls::causal_softmax, "out");

void check(const ArgCheck& check, std::span<const Tensor> tensors, std::span<double>) {
  const Tensor& input = tensors[kInput];
  if (input.rank() != 2 && input.rank() != 3) {
    check.fail(ErrorKind::kInvalidArgument, "input", "rank 2 [S, T] or 3 [B, S, T]",
               "rank " + std::to_string(input.rank()) + " " + input.describe());
  }
  if (input.size(-1) < input.size(-2)) {
    check.fail(ErrorKind::kInvalidArgument, "input", "T >= S (last dim at least the one before)",
               input.shape().to_string());
  }
  check.shape_is(tensors[kOut], "out", input.shape(), "same as input");
}

Dims output_shape(std::string_view, int, std::span<const Tensor> tensors, std::span<const double>) {
  return tensors[kInput].shape();
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp causal_softmax{
    decls::causal_softmax,
    {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
