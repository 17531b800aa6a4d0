// dequantize_tiles_bf16 and dequantize_tiles_bf16_row_tiles (quantized_kernels.h) on CPUs with
// AVX512-BF16: the same bfloat16 values (round to nearest even; subnormal results flush to zero),
// rounded by VCVTNEPS2BF16, one instruction per 16 values where Highway 1.0's portable rounding
// takes several. The bfloat16 panel paths of linear_quantized (prefill) spent as long
// dequantizing as multiplying. Used only where dpbf16_enabled() says so.
#pragma once

#include <cstdint>

#include "src/ops/cpu/simd/quantized_kernels.h"

namespace tileops::ops::cpu {

void dpbf16_dequantize_tiles(const std::uint8_t* tiles_start, std::int64_t tiles,
                             const QuantizedBlocks& q, std::int64_t k0, std::int64_t k1,
                             bool scaled, std::uint16_t* out, std::int64_t ld);

void dpbf16_dequantize_tiles_row_tiles(const std::uint8_t* tiles_start, std::int64_t tiles,
                                       const QuantizedBlocks& q, std::int64_t k0, std::int64_t k1,
                                       bool scaled, std::uint16_t* out);

}  // namespace tileops::ops::cpu
