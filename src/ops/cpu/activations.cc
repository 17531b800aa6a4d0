// vLLM's activations on CPU (include/tileops/ops/activations.h). The gated forms read the two
// halves of input along `dim` as views with input's strides, the second offset by
// d·stride[dim]; the elementwise forms read input once. Both run over the elementwise loop:
// run_staged_float reads blocks into float32 (in place when already contiguous float32), maps
// them, and rounds once on store.
#include <cmath>
#include <limits>
#include <memory>

#include "src/ops/contracts/fatrelu_and_mul.decl.h"
#include "src/ops/contracts/gelu_and_mul.decl.h"
#include "src/ops/contracts/gelu_fast.decl.h"
#include "src/ops/contracts/gelu_new.decl.h"
#include "src/ops/contracts/gelu_quick.decl.h"
#include "src/ops/contracts/gelu_tanh_and_mul.decl.h"
#include "src/ops/contracts/mul_and_silu.decl.h"
#include "src/ops/cpu/elementwise_float.h"
#include "src/ops/cpu/elementwise_loop.h"
#include "src/ops/cpu/register.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declarations: one kernel serves all seven, so their
// input, out and dim must sit alike (checked at compile time).
constexpr int kInput = tensor_index(decls::gelu_new, "input");
constexpr int kOut = tensor_index(decls::gelu_new, "out");
constexpr int kDim = attribute_index(decls::gelu_and_mul, "dim");
constexpr int kFatreluThreshold = attribute_index(decls::fatrelu_and_mul, "threshold");
constexpr int kFatreluDim = attribute_index(decls::fatrelu_and_mul, "dim");
constexpr const OpDecl* kForms[] = {
    &decls::gelu_and_mul, &decls::gelu_tanh_and_mul, &decls::fatrelu_and_mul, &decls::mul_and_silu,
    &decls::gelu_new,     &decls::gelu_fast,         &decls::gelu_quick};
consteval bool forms_agree() {
  for (const OpDecl* d : kForms) {
    if (tensor_index(*d, "input") != kInput || tensor_index(*d, "out") != kOut) return false;
  }
  return attribute_index(decls::gelu_tanh_and_mul, "dim") == kDim &&
         attribute_index(decls::mul_and_silu, "dim") == kDim;
}
static_assert(forms_agree());

enum class Activation {
  kGeluAndMul,
  kGeluTanhAndMul,
  kFatreluAndMul,
  kMulAndSilu,
  kGeluNew,
  kGeluFast,
  kGeluQuick,
};

bool is_gated(Activation act) { return act <= Activation::kMulAndSilu; }

// x / (1 + e) where e = exp(-k·x): x · sigmoid(k·x). e = +inf (x very negative, or -inf) gives
// 0, the limit, where the division would give NaN at x = -inf.
float times_sigmoid(float x, float e) {
  return std::isinf(e) ? std::copysign(0.0f, x) : x / (1.0f + e);
}

// 1 + tanh(u) = 2 · sigmoid(2u): no cancellation where tanh(u) nears -1.
float gelu_tanh_of(float x, float u) { return times_sigmoid(x, std::exp(-2.0f * u)); }

// x/2 · (1 + erf(x/√2)) = x/2 · erfc(-x/√2): erfc keeps its relative accuracy for x < 0.
float gelu_erf(float x) {
  if (x == -std::numeric_limits<float>::infinity()) return -0.0f;
  return 0.5f * x * std::erfc(x * -0.70710678118654752f);
}
float gelu_tanh(float x) {
  return gelu_tanh_of(x, 0.79788456080286536f * (x + 0.044715f * x * x * x));
}
float gelu_fast(float x) { return gelu_tanh_of(x, 0.7978845608f * x * (1.0f + 0.044715f * x * x)); }
float gelu_quick(float x) { return times_sigmoid(x, std::exp(-1.702f * x)); }
float silu(float x) { return times_sigmoid(x, std::exp(-x)); }
// a <= threshold is false for NaN, which therefore propagates.
float fatrelu(float a, float threshold) { return a <= threshold ? 0.0f : a; }

// out[i] = act(a[i], b[i]) on float32; b is null for the elementwise forms. out may be a.
void activation_rows(Activation act, float threshold, const float* a, const float* b,
                     std::int64_t n, float* out) {
  const auto map = [&](auto f) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(i);
  };
  switch (act) {
    case Activation::kGeluAndMul:
      return map([&](std::int64_t i) { return gelu_erf(a[i]) * b[i]; });
    case Activation::kGeluTanhAndMul:
      return map([&](std::int64_t i) { return gelu_tanh(a[i]) * b[i]; });
    case Activation::kFatreluAndMul:
      return map([&](std::int64_t i) { return fatrelu(a[i], threshold) * b[i]; });
    case Activation::kMulAndSilu:
      return map([&](std::int64_t i) { return a[i] * silu(b[i]); });
    case Activation::kGeluNew:
      return map([&](std::int64_t i) { return gelu_tanh(a[i]); });
    case Activation::kGeluFast:
      return map([&](std::int64_t i) { return gelu_fast(a[i]); });
    case Activation::kGeluQuick:
      return map([&](std::int64_t i) { return gelu_quick(a[i]); });
  }
}

class ActivationCpu final : public Operator {
 public:
  ActivationCpu(const Problem& problem, Activation act)
      : loop_(problem.tensors[kOut].shape,
              {problem.tensors[kInput].strides, problem.tensors[kInput].strides,
               problem.tensors[kOut].strides}),
        dtype_(problem.tensors[kOut].dtype),
        act_(act) {
    if (!is_gated(act)) return;
    const bool has_threshold = act == Activation::kFatreluAndMul;
    if (has_threshold) threshold_ = static_cast<float>(problem.attributes[kFatreluThreshold]);
    const int dim = static_cast<int>(problem.attributes[has_threshold ? kFatreluDim : kDim]);
    const TensorDesc& input = problem.tensors[kInput];
    // Within input's own extent, which the contract bounded.
    second_half_bytes_ =
        input.shape[dim] / 2 * input.strides[dim] * static_cast<std::int64_t>(size_of(dtype_));
  }

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const char* first = static_cast<const char*>(tensors[kInput].data());
    const char* second = is_gated(act_) ? first + second_half_bytes_ : nullptr;
    run_staged_float(loop_, dtype_, first, second, tensors[kOut], ctx,
                     [this](const float* a, const float* b, std::int64_t n, float* result) {
                       activation_rows(act_, threshold_, a, b, n, result);
                     });
  }

 private:
  ElementwiseLoop loop_;
  DataType dtype_;
  Activation act_;
  float threshold_ = 0.0f;
  std::int64_t second_half_bytes_ = 0;
};

void add(std::vector<Implementation>& out, const char* op, Activation act) {
  out.push_back({op, DeviceType::kCpu, 0, "native",
                 [act](const Problem& p) { return std::make_unique<ActivationCpu>(p, act); }});
}

}  // namespace

void register_activations(std::vector<Implementation>& out) {
  add(out, "gelu_and_mul", Activation::kGeluAndMul);
  add(out, "gelu_tanh_and_mul", Activation::kGeluTanhAndMul);
  add(out, "fatrelu_and_mul", Activation::kFatreluAndMul);
  add(out, "mul_and_silu", Activation::kMulAndSilu);
  add(out, "gelu_new", Activation::kGeluNew);
  add(out, "gelu_fast", Activation::kGeluFast);
  add(out, "gelu_quick", Activation::kGeluQuick);
}

}  // namespace tileops::ops::cpu
