// linear on CPU: input [..., K] · weight[N, K]ᵀ is a GEMM with B = the weight's transpose (its
// columns run along K, which sends up to 16 rows to the weight-streaming decode path), bias
// added in the epilogue.
#include <memory>

#include "src/ops/contracts/linear.decl.h"
#include "src/ops/cpu/gemm/batched_gemm.h"
#include "src/ops/cpu/gemm/engines.h"
#include "src/ops/cpu/register.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/linear.decl.h).
constexpr int kInput = tensor_index(decls::linear, "input");
constexpr int kWeight = tensor_index(decls::linear, "weight");
constexpr int kBias = tensor_index(decls::linear, "bias");
constexpr int kOut = tensor_index(decls::linear, "out");

// A rank-1 vector as a one-row matrix.
Tensor as_matrix(const Tensor& t) {
  if (t.rank() >= 2) return t;
  return t.with_shape(Dims{1, t.size(0)}, Dims{t.size(0) * t.stride(0), t.stride(0)});
}

class LinearCpu final : public Operator {
 public:
  explicit LinearCpu(const GemmEngineInfo& engine) : engine_(engine) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& bias = tensors[kBias];
    BatchedGemm g = make_batched_gemm(as_matrix(tensors[kInput]), false, tensors[kWeight], true,
                                      as_matrix(tensors[kOut]));
    if (bias.data() != nullptr) {
      g.call.bias = bias.data();
      g.call.bias_dtype = bias.dtype();
      g.call.bias_stride = bias.stride(0);
    }
    run_batched_gemm(engine_.run, engine_.parallel_batches, g, ctx);
  }

 private:
  GemmEngineInfo engine_;
};

}  // namespace

void register_linear(std::vector<Implementation>& out) {
  for (const GemmEngineInfo& engine : gemm_engines()) {
    out.push_back({"linear", DeviceType::kCpu, engine.index, engine.name,
                   [engine](const Problem&) { return std::make_unique<LinearCpu>(engine); }});
  }
}

}  // namespace tileops::ops::cpu
