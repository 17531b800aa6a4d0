#include "src/ops/contracts/gated_problem.h"

#include <string>

namespace tileops::ops {

void check_gated(const ArgCheck& check, const Tensor& input, const Tensor& out, double& dim) {
  const int given = static_cast<int>(dim);
  const int d = normalize_dim(given, input.rank());
  if (d < 0) {
    check.fail(
        ErrorKind::kInvalidArgument, "dim",
        "a dim in [" + std::to_string(-input.rank()) + ", " + std::to_string(input.rank()) + ")",
        std::to_string(given));
  }
  if (input.shape()[d] % 2 != 0) {
    check.fail(ErrorKind::kInvalidArgument, "input",
               "an even extent along dim " + std::to_string(given), input.describe());
  }
  Dims half = input.shape();
  half[d] /= 2;
  check.shape_is(out, "out", half, "input's shape with half its extent along dim");
  dim = d;
}

// Its messages predate the contract's (Python's allocation of out came first).
Dims gated_output_shape(std::string_view op, const Tensor& input, double dim) {
  const int given = static_cast<int>(dim);
  const int d = normalize_dim(given, input.rank());
  if (d < 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "dim",
                         "a dim of a rank-" + std::to_string(input.rank()) + " tensor",
                         std::to_string(given));
  }
  Dims shape = input.shape();
  if (shape[d] % 2 != 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "input",
                         "an even extent along dim " + std::to_string(given), shape.to_string());
  }
  shape[d] /= 2;
  return shape;
}

}  // namespace tileops::ops
