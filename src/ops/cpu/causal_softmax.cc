// causal_softmax on CPU: each row reads only its visible prefix and writes zeros over the masked
// suffix (src/ops/cpu/softmax_rows.h). Rows are visited in zig-zag order so the contiguous
// chunks of the thread pool get equal work.
#include <memory>

#include "src/ops/contracts/causal_softmax.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/softmax_rows.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/causal_softmax.decl.h).
constexpr int kInput = tensor_index(decls::causal_softmax, "input");
constexpr int kOut = tensor_index(decls::causal_softmax, "out");

class CausalSoftmaxCpu final : public Operator {
 public:
  explicit CausalSoftmaxCpu(const Problem& problem)
      : queries_(problem.tensors[kInput].shape[problem.tensors[kInput].shape.size() - 2]),
        keys_(problem.tensors[kInput].shape.back()) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    // Row i of the S query rows sees keys [0, T - S + i]; T >= S makes that non-empty.
    run_softmax_rows(
        tensors[kInput], tensors[kOut], 1.0f,
        [this](std::int64_t r) { return keys_ - queries_ + r % queries_ + 1; }, RowOrder::kZigZag,
        ctx);
  }

 private:
  std::int64_t queries_;  // S
  std::int64_t keys_;     // T
};

}  // namespace

void register_causal_softmax(std::vector<Implementation>& out) {
  out.push_back({"causal_softmax", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<CausalSoftmaxCpu>(p); }});
}

}  // namespace tileops::ops::cpu
