// BatchedGemm: a contract's tensors turned into GemmCalls — op(a) and op(b) over the last two
// dims (a transpose swaps strides), batch dims broadcast NumPy-style (stride 0), and batches
// folded into rows where the layout allows (e.g. linear over [batch, seq, K] is one GEMM).
#pragma once

#include <cstdint>
#include <vector>

#include "src/ops/cpu/gemm/gemm_call.h"
#include "tileops/core/tensor.h"

namespace tileops::ops::cpu {

struct BatchedGemm {
  GemmCall call;  // the first batch
  // Element offsets of a, b and c for every batch (one entry each when unbatched).
  std::vector<std::int64_t> a_offsets, b_offsets, c_offsets;
};

// a [..., M, K] (or [..., K, M] with trans_a), b [..., K, N] (or [..., N, K]), c [..., M, N];
// ranks >= 2, batch dims already validated to broadcast to c's. alpha, beta and bias are left
// at their defaults.
BatchedGemm make_batched_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                              const Tensor& c);

// Runs every batch with `engine`. Small matrices in large batches run one batch per thread
// when `parallel_batches` (engines that bring their own threads say false).
void run_batched_gemm(GemmEngine engine, bool parallel_batches, const BatchedGemm& gemm,
                      const Context& ctx);

}  // namespace tileops::ops::cpu
