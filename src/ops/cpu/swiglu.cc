// swiglu on CPU: out = input · silu(gate) through the shared elementwise loop (no broadcasting;
// dims merged where all three tensors are contiguous together).
#include <memory>

#include "src/ops/contracts/swiglu.decl.h"
#include "src/ops/cpu/elementwise_float.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/elementwise_kernels.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/swiglu.decl.h).
constexpr int kInput = tensor_index(decls::swiglu, "input");
constexpr int kGate = tensor_index(decls::swiglu, "gate");
constexpr int kOut = tensor_index(decls::swiglu, "out");

class SwigluCpu final : public Operator {
 public:
  explicit SwigluCpu(const Problem& problem)
      : loop_(problem.tensors[kOut].shape,
              {problem.tensors[kInput].strides, problem.tensors[kGate].strides,
               problem.tensors[kOut].strides}),
        dtype_(problem.tensors[kOut].dtype) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    run_float_elementwise(loop_, ElementwiseOp::kSwiglu, dtype_, tensors[kInput].data(),
                          tensors[kGate].data(), tensors[kOut], ctx);
  }

 private:
  ElementwiseLoop loop_;
  DataType dtype_;
};

}  // namespace

void register_swiglu(std::vector<Implementation>& out) {
  out.push_back({"swiglu", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<SwigluCpu>(p); }});
}

}  // namespace tileops::ops::cpu
