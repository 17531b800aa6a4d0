// swiglu on CPU: out = input · silu(gate) through the shared elementwise loop (no broadcasting;
// dims merged where all three tensors are contiguous together).
#include <memory>

#include "src/ops/cpu/elementwise_float.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/elementwise_kernels.h"

namespace tileops::ops::cpu {
namespace {

class SwigluCpu final : public Operator {
 public:
  explicit SwigluCpu(const Problem& problem)
      : loop_(problem.tensors[2].shape,
              {problem.tensors[0].strides, problem.tensors[1].strides, problem.tensors[2].strides}),
        dtype_(problem.tensors[2].dtype) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    run_float_elementwise(loop_, ElementwiseOp::kSwiglu, dtype_, tensors[0].data(),
                          tensors[1].data(), tensors[2], ctx);
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
