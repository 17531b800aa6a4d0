// matmul on CPU: the contract's tensors as a batched GemmCall for the chosen engine.
#include <memory>

#include "src/ops/cpu/gemm/batched_gemm.h"
#include "src/ops/cpu/gemm/engines.h"
#include "src/ops/cpu/register.h"

namespace tileops::ops::cpu {
namespace {

class MatmulCpu final : public Operator {
 public:
  MatmulCpu(const Problem& problem, const GemmEngineInfo& engine)
      : engine_(engine),
        trans_a_(problem.attributes[0] != 0.0),
        trans_b_(problem.attributes[1] != 0.0) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const BatchedGemm g = make_batched_gemm(tensors[0], trans_a_, tensors[1], trans_b_, tensors[2]);
    run_batched_gemm(engine_.run, engine_.parallel_batches, g, ctx);
  }

 private:
  GemmEngineInfo engine_;
  bool trans_a_, trans_b_;
};

}  // namespace

void register_matmul(std::vector<Implementation>& out) {
  for (const GemmEngineInfo& engine : gemm_engines()) {
    out.push_back({"matmul", DeviceType::kCpu, engine.index, engine.name,
                   [engine](const Problem& p) { return std::make_unique<MatmulCpu>(p, engine); }});
  }
}

}  // namespace tileops::ops::cpu
