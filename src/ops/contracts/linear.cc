// linear's contract beyond its declaration (linear.decl.h); the typed function and class are
// generated.
#include "src/ops/contracts/linear.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// input's shape with the last dim N = weight.size(0).
Dims out_shape(const Tensor& input, const Tensor& weight) {
  Dims shape = input.shape();
  shape[shape.size() - 1] = weight.size(0);
  return shape;
}

// Tensors {input, weight, bias, out}.
void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> /*attrs*/) {
  const std::int64_t n = t[1].size(0);
  check.shape_is(t[1], "weight", Dims{n, t[0].size(-1)}, "[N, K] with K the last dim of input");
  if (present(t[2])) check.shape_is(t[2], "bias", Dims{n}, "[N], N = weight.size(0)");
  check.shape_is(t[3], "out", out_shape(t[0], t[1]), "input's shape with the last dim N");
}

Dims output_shape(std::string_view op, int /*arg*/, std::span<const Tensor> t,
                  std::span<const double> /*attrs*/) {
  if (t[0].rank() < 1 || t[1].rank() != 2) {
    const bool input_bad = t[0].rank() < 1;
    ArgCheck(op).fail(ErrorKind::kInvalidArgument, input_bad ? "input" : "weight",
                      input_bad ? "rank >= 1" : "rank 2 [N, K]",
                      t[input_bad ? 0 : 1].shape().to_string());
  }
  return out_shape(t[0], t[1]);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp linear{
    decls::linear,
    {.check = check, .output_shape = output_shape, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
