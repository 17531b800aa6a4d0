// Compute ceilings of this CPU for bench/gemm_bench.cc, measured with the same SIMD target the
// GEMM kernels dispatch to: float32 FMA throughput and the best bfloat16 multiply-accumulate
// throughput Highway offers (ReorderWidenMulAccumulate: a dot-product instruction where the CPU
// has one, widen + FMA on AVX2).
#pragma once

#include <cstdint>

namespace tileops::bench {

// Runs `iterations` rounds of independent FMA chains on one thread; returns the float32 FLOPs
// done (2 per lane per FMA) and a value the caller must consume.
double fma_peak_flops(std::int64_t iterations, float* sink);

// The same with bfloat16 inputs widened and accumulated in float32; FLOPs count 2 per bfloat16
// product.
double bf16_peak_flops(std::int64_t iterations, float* sink);

}  // namespace tileops::bench
