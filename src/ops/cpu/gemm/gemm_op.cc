// gemm on CPU: the contract's tensors as a batched GemmCall for the chosen engine.
#include <memory>

#include "src/ops/contracts/gemm.decl.h"
#include "src/ops/cpu/gemm/batched_gemm.h"
#include "src/ops/cpu/gemm/engines.h"
#include "src/ops/cpu/register.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/gemm.decl.h).
constexpr int kA = tensor_index(decls::gemm, "a");
constexpr int kB = tensor_index(decls::gemm, "b");
constexpr int kC = tensor_index(decls::gemm, "c");
constexpr int kAlpha = attribute_index(decls::gemm, "alpha");
constexpr int kBeta = attribute_index(decls::gemm, "beta");
constexpr int kTransA = attribute_index(decls::gemm, "trans_a");
constexpr int kTransB = attribute_index(decls::gemm, "trans_b");

class GemmCpu final : public Operator {
 public:
  GemmCpu(const Problem& problem, const GemmEngineInfo& engine)
      : engine_(engine),
        alpha_(static_cast<float>(problem.attributes[kAlpha])),
        beta_(static_cast<float>(problem.attributes[kBeta])),
        trans_a_(problem.attributes[kTransA] != 0.0),
        trans_b_(problem.attributes[kTransB] != 0.0) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    BatchedGemm g = make_batched_gemm(tensors[kA], trans_a_, tensors[kB], trans_b_, tensors[kC]);
    g.call.alpha = alpha_;
    g.call.beta = beta_;
    run_batched_gemm(engine_.run, engine_.parallel_batches, g, ctx);
  }

 private:
  GemmEngineInfo engine_;
  float alpha_, beta_;
  bool trans_a_, trans_b_;
};

}  // namespace

void register_gemm(std::vector<Implementation>& out) {
  for (const GemmEngineInfo& engine : gemm_engines()) {
    out.push_back({"gemm", DeviceType::kCpu, engine.index, engine.name,
                   [engine](const Problem& p) { return std::make_unique<GemmCpu>(p, engine); }});
  }
}

}  // namespace tileops::ops::cpu
