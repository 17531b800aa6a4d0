// matmul on CPU: the contract's tensors as a batched GemmCall for the chosen engine.
#include <memory>

#include "src/ops/contracts/matmul.decl.h"
#include "src/ops/cpu/gemm/batched_gemm.h"
#include "src/ops/cpu/gemm/engines.h"
#include "src/ops/cpu/register.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/matmul.decl.h).
constexpr int kA = tensor_index(decls::matmul, "a");
constexpr int kB = tensor_index(decls::matmul, "b");
constexpr int kC = tensor_index(decls::matmul, "c");
constexpr int kTransA = attribute_index(decls::matmul, "trans_a");
constexpr int kTransB = attribute_index(decls::matmul, "trans_b");

class MatmulCpu final : public Operator {
 public:
  MatmulCpu(const Problem& problem, const GemmEngineInfo& engine)
      : engine_(engine),
        trans_a_(problem.attributes[kTransA] != 0.0),
        trans_b_(problem.attributes[kTransB] != 0.0) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const BatchedGemm g =
        make_batched_gemm(tensors[kA], trans_a_, tensors[kB], trans_b_, tensors[kC]);
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
