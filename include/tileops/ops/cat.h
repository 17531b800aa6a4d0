// cat: concatenates tensors along `dim` (negative counts from the end).
#pragma once

#include <span>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// tensors: one or more, same rank and dtype (any dtype), equal extents except along `dim`; out:
// their shape with the extents along `dim` summed, same dtype. Any strides; empty inputs allowed.
void cat(std::span<const Tensor> tensors, int dim, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class Cat {
 public:
  Cat(std::span<const Tensor> tensors, int dim, const Tensor& out, int implementation_index = 0);
  void operator()(std::span<const Tensor> tensors, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
