// linear_quantized's one-row path for int4 weights and bfloat16 x on VDPBF16PS (AVX512-BF16).
// A code q (0..15) becomes the bfloat16 128 + q by one OR (its bits are 0x4300 | q), so a
// vector of codes turns into bfloat16 weights in three integer instructions, and each
// VDPBF16PS does 32 multiply-adds where the float32 kernel widens every code to a float and
// does 16. The offset comes off once per group, with the zero point: Σ s·(q − z)·x =
// s·(Σ (128 + q)·x − (128 + z)·Σx). Used only where dpbf16_enabled() says so.
#pragma once

#include <cstdint>

#include "src/ops/cpu/simd/quantized_kernels.h"

namespace tileops::ops::cpu {

// Floats of the prepared x (dpbf16_int4_prepare_x) for weights of this geometry.
std::int64_t dpbf16_int4_x_floats(const QuantizedBlocks& q);

// x (bfloat16 bits, group·groups elements, zero where the weight is padded) reordered as the
// kernel reads it: groups of 32 as 4 planes of 8 elements per group, one per nibble position of
// the codes' 16-bit words; larger groups per unit of 64 codes of a row, the 32 x elements of the
// low nibbles and the 32 of the high ones; then each group's Σx as float32.
void dpbf16_int4_prepare_x(const std::uint16_t* x, const QuantizedBlocks& q, float* prepared);

// quantized_dots_m1's contract (int4 formats) for the prepared x.
void dpbf16_int4_dots_m1(const float* prepared, const std::uint8_t* tiles_start, std::int64_t tiles,
                         const QuantizedBlocks& q, float* out);

}  // namespace tileops::ops::cpu
