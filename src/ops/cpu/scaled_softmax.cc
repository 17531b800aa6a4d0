// scaled_softmax on CPU: every row is fully visible (src/ops/cpu/softmax_rows.h).
#include <memory>

#include "src/ops/contracts/scaled_softmax.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/softmax_rows.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/scaled_softmax.decl.h).
constexpr int kInput = tensor_index(decls::scaled_softmax, "input");
constexpr int kOut = tensor_index(decls::scaled_softmax, "out");
constexpr int kScale = attribute_index(decls::scaled_softmax, "scale");

class ScaledSoftmaxCpu final : public Operator {
 public:
  explicit ScaledSoftmaxCpu(const Problem& problem)
      : scale_(static_cast<float>(problem.attributes[kScale])),
        width_(problem.tensors[kInput].shape.back()) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    run_softmax_rows(
        tensors[kInput], tensors[kOut], scale_, [this](std::int64_t) { return width_; },
        RowOrder::kSequential, ctx);
  }

 private:
  float scale_;
  std::int64_t width_;
};

}  // namespace

void register_scaled_softmax(std::vector<Implementation>& out) {
  out.push_back({"scaled_softmax", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<ScaledSoftmaxCpu>(p); }});
}

}  // namespace tileops::ops::cpu
