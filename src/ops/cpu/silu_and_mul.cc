// silu_and_mul on CPU: the two halves of input along `dim` are views with input's strides, the
// second offset by d·stride[dim]; out = second · silu(first) is then swiglu's kernel over the
// shared elementwise loop (kSwigluOfHalves: with a software prefetch of the next row).
#include <memory>

#include "src/ops/contracts/silu_and_mul.decl.h"
#include "src/ops/cpu/elementwise_float.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/elementwise_kernels.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/silu_and_mul.decl.h).
constexpr int kInput = tensor_index(decls::silu_and_mul, "input");
constexpr int kOut = tensor_index(decls::silu_and_mul, "out");
constexpr int kDim = attribute_index(decls::silu_and_mul, "dim");

class SiluAndMulCpu final : public Operator {
 public:
  explicit SiluAndMulCpu(const Problem& problem)
      : loop_(problem.tensors[kOut].shape,
              {problem.tensors[kInput].strides, problem.tensors[kInput].strides,
               problem.tensors[kOut].strides}),
        dtype_(problem.tensors[kOut].dtype) {
    const int dim = static_cast<int>(problem.attributes[kDim]);
    const TensorDesc& input = problem.tensors[kInput];
    second_half_bytes_ =
        input.shape[dim] / 2 * input.strides[dim] * static_cast<std::int64_t>(size_of(dtype_));
  }

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const char* first = static_cast<const char*>(tensors[kInput].data());
    // An empty input may have no data: never offset a null pointer.
    const char* second = first == nullptr ? first : first + second_half_bytes_;
    run_float_elementwise(loop_, ElementwiseOp::kSwigluOfHalves, dtype_, second, first,
                          tensors[kOut], ctx);
  }

 private:
  ElementwiseLoop loop_;
  DataType dtype_;
  std::int64_t second_half_bytes_ = 0;
};

}  // namespace

void register_silu_and_mul(std::vector<Implementation>& out) {
  out.push_back({"silu_and_mul", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<SiluAndMulCpu>(p); }});
}

}  // namespace tileops::ops::cpu
