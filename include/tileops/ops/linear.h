// linear: out = input·weightᵀ + bias, the weight in its caller's [N, K] layout.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input: [..., K] (rank >= 1); weight: [N, K]; bias: [N] or an undefined Tensor (none); out:
// [..., N]. input, weight and out of one dtype in {float32, float16, bfloat16}, bias any of
// those; float32 accumulation; any strides; out must not overlap the inputs. Up to 16 rows
// (decode) stream the weight once without packing it.
void linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
            const Context& ctx = {});

class Linear {
 public:
  Linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
         int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
