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

// The hooks of a gated operator, reading its input, out and dim by name.
template <const OpDecl& kDecl>
void check_gated_at(const ArgCheck& check, std::span<const Tensor> tensors,
                    std::span<double> attributes) {
  check_gated(check, tensors[tensor_index(kDecl, "input")], tensors[tensor_index(kDecl, "out")],
              attributes[attribute_index(kDecl, "dim")]);
}
template <const OpDecl& kDecl>
Dims gated_output_shape_at(std::string_view op, int, std::span<const Tensor> tensors,
                           std::span<const double> attributes) {
  return gated_output_shape(op, tensors[tensor_index(kDecl, "input")],
                            attributes[attribute_index(kDecl, "dim")]);
}

}  // namespace tileops::ops
