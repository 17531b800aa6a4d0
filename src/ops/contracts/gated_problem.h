// Validation shared by the gated activations (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul,
// fatrelu_and_mul, mul_and_silu): input [..., 2d, ...] is split into halves along the attribute
// `dim`, and out is input's shape with d along it. The declarations state the dtypes.
#pragma once

#include <span>
#include <string_view>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/dims.h"
#include "tileops/core/tensor.h"
#include "tileops/ops/declaration.h"

namespace tileops::ops {

// dim must name a dim of input whose extent is even; out's shape is input's with that extent
// halved. Rewrites dim to its normalised (>= 0) form, which the implementations read.
void check_gated(const ArgCheck& check, const Tensor& input, const Tensor& out, double& dim);

// What Python allocates for an omitted out; throws naming dim or input.
Dims gated_output_shape(std::string_view op, const Tensor& input, double dim);

// Where a gated operator's declaration puts input, out and dim. (Computed outside the hook
// templates: clang 14 evaluates a consteval call on a template parameter too early.)
struct GatedArgs {
  int input, out, dim;
};
consteval GatedArgs gated_args(const OpDecl& op) {
  return {tensor_index(op, "input"), tensor_index(op, "out"), attribute_index(op, "dim")};
}

// The hooks of a gated operator: check_gated_at<gated_args(decls::op)>.
template <GatedArgs kArgs>
void check_gated_at(const ArgCheck& check, std::span<const Tensor> tensors,
                    std::span<double> attributes) {
  check_gated(check, tensors[kArgs.input], tensors[kArgs.out], attributes[kArgs.dim]);
}
template <GatedArgs kArgs>
Dims gated_output_shape_at(std::string_view op, int, std::span<const Tensor> tensors,
                           std::span<const double> attributes) {
  return gated_output_shape(op, tensors[kArgs.input], attributes[kArgs.dim]);
}

}  // namespace tileops::ops
