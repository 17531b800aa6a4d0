// embedding: declared (embedding.decl.h) with the checks below it cannot state; the typed function
// and class are generated.
#include <string>

#include "src/ops/contracts/embedding.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/embedding.decl.h).
constexpr int kInputIds = tensor_index(decls::embedding, "input_ids");
constexpr int kWeight = tensor_index(decls::embedding, "weight");
constexpr int kOut = tensor_index(decls::embedding, "out");

void check(const ArgCheck& check, std::span<const Tensor> tensors, std::span<double>) {
  const Tensor& input_ids = tensors[kInputIds];
  if (input_ids.rank() >= kMaxRank) {
    check.fail(ErrorKind::kInvalidArgument, "input_ids",
               "rank <= " + std::to_string(kMaxRank - 1) + " (out adds a dim)",
               "rank " + std::to_string(input_ids.rank()));
  }
  Dims out_shape = input_ids.shape();
  out_shape.push_back(tensors[kWeight].size(1));
  check.shape_is(tensors[kOut], "out", out_shape, "input_ids' shape, then weight's embedding dim");
}

// What Python allocates for an omitted out (its messages predate the contract's).
Dims output_shape(std::string_view op, int, std::span<const Tensor> tensors,
                  std::span<const double>) {
  const Tensor& weight = tensors[kWeight];
  if (weight.rank() != 2) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "weight", "rank 2 [num_embeddings, D]",
                         weight.shape().to_string());
  }
  Dims shape = tensors[kInputIds].shape();
  if (shape.size() == kMaxRank) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "input_ids",
                         "rank < " + std::to_string(kMaxRank), shape.to_string());
  }
  shape.push_back(weight.shape()[1]);
  return shape;
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp embedding{
    decls::embedding,
    {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
