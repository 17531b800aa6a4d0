// linear over a packed weight: the explicit `pack_weight` option of linear. pack_linear_weight
// copies a [N, K] weight once into a layout that the decode kernels stream sequentially (16
// weight rows interleaved per K step, in K blocks); linear_packed then computes the same
// out = input·weightᵀ + bias. Up to 16 rows of input (decode) read the packed weight at the
// memory's speed where the caller's layout reaches about 0.7 of it; more rows are served in
// chunks of 16. The caller owns the packed tensor and repacks when the weight changes.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// Elements of the packed form of a [n, k] weight of `dtype` (float32, float16 or bfloat16):
// n rounded up to 16, times k (rounded up to even for bfloat16). The layout is internal to
// tileops and may change between versions; only its size is part of the contract.
std::int64_t packed_linear_weight_numel(std::int64_t n, std::int64_t k, DataType dtype);

// weight: [N, K], float32/float16/bfloat16, any strides. packed: rank 1, contiguous, the
// weight's dtype and device, packed_linear_weight_numel(N, K, dtype) elements; written.
void pack_linear_weight(const Tensor& weight, const Tensor& packed, const Context& ctx = {});

// linear(input, weight, bias, out) with `packed` = pack_linear_weight(weight). input: [..., K]
// (rank >= 1); out: [..., N] (N is taken from out); bias: [N] or an undefined Tensor (none).
// input, packed and out of one dtype, bias any float dtype; any strides for input, bias and
// out; out must not overlap the inputs.
void linear_packed(const Tensor& input, const Tensor& packed, const Tensor& bias, const Tensor& out,
                   const Context& ctx = {});

// Whether linear_packed over pack_linear_weight's layout is expected to beat linear over the
// caller's [N, K] layout for weights of `dtype` on this CPU, as its paths stand now (TILEOPS_AMX
// and TILEOPS_SIMD_TARGET included): false for bfloat16 where AMX is on, whose tile products
// linear runs on the [N, K] rows in place and linear_packed does not use (Emerald Rapids, the
// 1.1B decoder, 2 threads: prefill 3-4x and decode 1.2x faster unpacked). `tileops env` says it.
// dtype: float32, float16 or bfloat16 (else InvalidArgument).
bool linear_packing_pays(DataType dtype);

class LinearPacked {
 public:
  LinearPacked(const Tensor& input, const Tensor& packed, const Tensor& bias, const Tensor& out,
               int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& packed, const Tensor& bias, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
