// vLLM's activations beside silu_and_mul (vllm/model_executor/layers/activation.py): the gated
// forms split input in two halves along `dim`, the others map each element.
//
// Every operator: one dtype in {float32, float16, bfloat16} for input and out; any strides;
// float32 math rounded once to out's dtype (vLLM's kernels also round the activation before the
// product for 16-bit dtypes, so 16-bit results may differ from them by an ulp). NaN propagates.
// out may be input itself (the same view) for the elementwise forms; otherwise it must not
// overlap input.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// The gated forms: input [..., 2d, ...] with an even extent along `dim` (default last, negative
// allowed); out: input's shape with d along `dim`. a = input[..., :d], b = input[..., d:].

// out = gelu(a) · b, gelu(x) = x/2 · (1 + erf(x/√2)) (vLLM's GeluAndMul(approximate="none")).
void gelu_and_mul(const Tensor& input, int dim, const Tensor& out, const Context& ctx = {});
// out = gelu_tanh(a) · b, gelu_tanh(x) = x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))
// (GeluAndMul(approximate="tanh")).
void gelu_tanh_and_mul(const Tensor& input, int dim, const Tensor& out, const Context& ctx = {});
// out = (a > threshold ? a : 0) · b (FatreluAndMul); threshold finite as a float32. A NaN in a
// propagates (as torch's F.threshold does).
void fatrelu_and_mul(const Tensor& input, double threshold, int dim, const Tensor& out,
                     const Context& ctx = {});
// out = a · silu(b), silu(x) = x / (1 + e^-x) (MulAndSilu); silu(-inf) = 0, its limit.
void mul_and_silu(const Tensor& input, int dim, const Tensor& out, const Context& ctx = {});

// The elementwise forms: out has input's shape.

// out = x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))) (NewGELU).
void gelu_new(const Tensor& input, const Tensor& out, const Context& ctx = {});
// out = x/2 · (1 + tanh(0.7978845608 x · (1 + 0.044715 x²))) (FastGELU).
void gelu_fast(const Tensor& input, const Tensor& out, const Context& ctx = {});
// out = x · sigmoid(1.702 x) (QuickGELU).
void gelu_quick(const Tensor& input, const Tensor& out, const Context& ctx = {});

// The gelu forms give their limits at ±inf: x at +inf, 0 at -inf (torch gives NaN at -inf).

// Class forms: validated and specialised once for a geometry, then called on new data.
class GeluAndMul {
 public:
  GeluAndMul(const Tensor& input, int dim, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

class GeluTanhAndMul {
 public:
  GeluTanhAndMul(const Tensor& input, int dim, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

class FatreluAndMul {
 public:
  FatreluAndMul(const Tensor& input, double threshold, int dim, const Tensor& out,
                int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

class MulAndSilu {
 public:
  MulAndSilu(const Tensor& input, int dim, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

class GeluNew {
 public:
  GeluNew(const Tensor& input, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

class GeluFast {
 public:
  GeluFast(const Tensor& input, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

class GeluQuick {
 public:
  GeluQuick(const Tensor& input, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
