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

// `iterations` rounds of four bfloat16 AMX tile products (16×16×32 each) on one thread; returns the
// FLOPs done, 0 where this build has no AMX code. Call only where AMX is enabled
// (src/ops/cpu/simd/amx_kernels.h).
double amx_bf16_peak_flops(std::int64_t iterations);

// `iterations` rounds of sixteen independent AVX512-BF16 dot products (VDPBF16PS, 32 bfloat16
// multiply-adds each) on one thread; returns the FLOPs done, 0 where this build has no such code.
// Call only where cpu_avx512_bf16().
double dpbf16_peak_flops(std::int64_t iterations, float* sink);

// The sum of x[0, n) (n a multiple of 64) with four independent vector accumulators: a pure read
// stream, the ceiling of kernels that only read memory.
float read_sum(const float* x, std::int64_t n);

}  // namespace tileops::bench
