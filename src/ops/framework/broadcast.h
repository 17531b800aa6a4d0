// NumPy broadcasting: shapes are aligned on their last dim; extents must be equal or 1, and a
// missing or size-1 dim is repeated (stride 0) to the broadcast extent.
#pragma once

#include <optional>
#include <string_view>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/dims.h"
#include "tileops/core/tensor.h"

namespace tileops::ops {

// The broadcast shape of a and b, or nullopt when they are not broadcastable.
std::optional<Dims> broadcast_shapes(const Dims& a, const Dims& b);

// Strides that view a tensor of (shape, strides) with the shape `target` it broadcasts to:
// right-aligned, 0 for the dims it lacks and where its extent is 1.
Dims broadcast_strides(const Dims& shape, const Dims& strides, const Dims& target);

// out = f(input, other): input and other must broadcast (the error names `other_arg`) and out
// must have exactly the broadcast shape (the error names `out_arg`).
void check_broadcast_operands(const ArgCheck& check, const Tensor& input,
                              std::string_view input_arg, const Tensor& other,
                              std::string_view other_arg, const Tensor& out,
                              std::string_view out_arg);

}  // namespace tileops::ops
