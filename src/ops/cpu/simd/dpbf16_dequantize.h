// dequantize_tiles (quantized_kernels.h) into bfloat16 on CPUs with AVX512-BF16, for the
// bfloat16 paths of linear_quantized: rounded to nearest even by VCVTNE2PS2BF16 (32 values per
// instruction; subnormal results flush to zero), where Highway 1.0's portable rounding takes
// several instructions per 16. Those paths spent as long dequantizing as multiplying. int4 rounds
// each row's 16 possible values of a group once and looks the codes up (VPERMW), 32 values per
// instruction with no conversion: the same bits as converting every code. Used only where
// dpbf16_enabled() says so.
#pragma once

#include <cstdint>

#include "src/ops/cpu/simd/quantized_kernels.h"

namespace tileops::ops::cpu {

void dpbf16_dequantize_tiles(const std::uint8_t* tiles_start, std::int64_t tiles,
                             const QuantizedBlocks& q, std::int64_t k0, std::int64_t k1,
                             bool scaled, std::uint16_t* out, std::int64_t ld);

}  // namespace tileops::ops::cpu
