// SIMD kernels of linear over quantized weights (src/ops/cpu/gemm/quantized_linear.cc; the
// format is src/ops/contracts/quantized_format.h). A tile is kQuantizedTileRows = 4 weight rows;
// per group along K it holds 4 float32 scales, with zero points 4 float32 zero points, then the
// rows' codes in interleaved runs (QuantizedLayout::code_offset): int8, or int4 with byte i of a
// row's group holding code i (low nibble) and code i + group / 2 (high nibble), so that one vector
// of bytes widens to two runs of x.
#pragma once

#include <cstdint>

namespace tileops::ops::cpu {

// The block geometry the kernels walk (a QuantizedLayout's, without the header).
struct QuantizedBlocks {
  int bits = 8;        // 8: signed codes, w = s·q; 4: codes 0..15, w = s·(q − z)
  bool zeros = false;  // int4 with zero points stored (else z = 8)
  std::int64_t group = 0, groups = 0, meta_bytes = 0, row_code_bytes = 0, block_bytes = 0;
  // row_code_bytes is a whole number of runs (QuantizedLayout::code_offset).
  std::int64_t run_bytes = 0;
};

// out[4·t + r] = Σ_k x[k] · w(4·t + r, k) over the group·groups elements of x, for `tiles` tiles
// starting at `tiles_start` (the first tile's first block): x is float32 and zero where the
// weight is padded. The weight is dequantized in registers, one scale multiply per group.
void quantized_dots_m1(const float* x, const std::uint8_t* tiles_start, std::int64_t tiles,
                       const QuantizedBlocks& q, float* out);

// Weights against x as 16-bit fixed point: per block of quantized_fixed_x_block(q) elements
// (kFixedXBlock per channel, a group otherwise) x = s·v with v int16 and s the power of two that
// puts the block's largest |x| in [2^14, 2^15). bfloat16 x is then exact wherever an element is
// within 2^7 of its block's largest (its 8 significant bits fit); smaller elements round to s/2,
// 2^-15 of the largest. The products are 16-bit integer multiply-adds (a widening and one
// instruction per vector of codes, where the float32 kernel converts each code to a float).
inline constexpr std::int64_t kFixedXBlock = 256;
std::int64_t quantized_fixed_x_block(const QuantizedBlocks& q);

// v and scales (ceil(group·groups / block) of them) for x of group·groups elements, and unless
// null the blocks' sums s·Σv; false when x has an infinity or a NaN, or a block's largest |x|
// below 2^-100 (then v is incomplete and the caller uses quantized_dots_m1).
bool quantized_fixed_x(const float* x, const QuantizedBlocks& q, std::int16_t* v, float* scales,
                       float* sums = nullptr);

// quantized_dots_m1's contract for int8 weights over x as quantized_fixed_x made it.
void quantized_int8_fixed_dots_m1(const std::int16_t* x, const float* x_scales,
                                  const std::uint8_t* tiles_start, std::int64_t tiles,
                                  const QuantizedBlocks& q, float* out);

// The same for int4 weights, with the blocks' sums (the zero points' terms).
void quantized_int4_fixed_dots_m1(const std::int16_t* x, const float* x_scales, const float* x_sums,
                                  const std::uint8_t* tiles_start, std::int64_t tiles,
                                  const QuantizedBlocks& q, float* out);

// out[(4·t + r)·ld + k − k0] = w(4·t + r, k) as float32 for the same tiles and k0 <= k < k1: the
// panels the many-row paths multiply. k0 and k1 are multiples of 32 within group·groups, and
// for int4 bounds of whole groups. scaled = false leaves the scale out: q − z.
void dequantize_tiles(const std::uint8_t* tiles_start, std::int64_t tiles, const QuantizedBlocks& q,
                      std::int64_t k0, std::int64_t k1, bool scaled, float* out, std::int64_t ld);

}  // namespace tileops::ops::cpu
