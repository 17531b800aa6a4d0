// linear's contract beyond its declaration (linear.decl.h); the typed function and class are
// generated.
#include "src/ops/contracts/linear.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr int kInput = tensor_index(decls::linear, "input");
constexpr int kWeight = tensor_index(decls::linear, "weight");
constexpr int kBias = tensor_index(decls::linear, "bias");
constexpr int kOut = tensor_index(decls::linear, "out");

bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// input's shape with the last dim N = weight.size(0).
Dims out_shape(const Tensor& input, const Tensor& weight) {
  Dims shape = input.shape();
  shape[shape.size() - 1] = weight.size(0);
  return shape;
}

void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> /*attrs*/) {
  const Tensor& input = t[kInput];
  const Tensor& weight = t[kWeight];
  const std::int64_t n = weight.size(0);
  check.shape_is(weight, "weight", Dims{n, input.size(-1)}, "[N, K] with K the last dim of input");
  if (present(t[kBias])) check.shape_is(t[kBias], "bias", Dims{n}, "[N], N = weight.size(0)");
  check.shape_is(t[kOut], "out", out_shape(input, weight), "input's shape with the last dim N");
}

Dims output_shape(std::string_view op, int /*arg*/, std::span<const Tensor> t,
                  std::span<const double> /*attrs*/) {
  const Tensor& input = t[kInput];
  const Tensor& weight = t[kWeight];
  if (input.rank() < 1 || weight.rank() != 2) {
    const bool input_bad = input.rank() < 1;
    ArgCheck(op).fail(ErrorKind::kInvalidArgument, input_bad ? "input" : "weight",
                      input_bad ? "rank >= 1" : "rank 2 [N, K]",
                      (input_bad ? input : weight).shape().to_string());
  }
  return out_shape(input, weight);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp linear{
    decls::linear,
    {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
