// quantize_weight and pack_quantized_codes on CPU (the format:
// src/ops/contracts/quantized_format.h).
#pragma once

#include <cstdint>
#include <memory>

#include "src/ops/contracts/quantized_format.h"
#include "tileops/ops/problem.h"
#include "tileops/ops/registry.h"

namespace tileops::ops::cpu {

std::unique_ptr<Operator> make_quantize_weight(const Problem& problem);
// pack_quantized_codes on CPU (pack_quantized_codes.cc).
std::unique_ptr<Operator> make_pack_quantized_codes(const Problem& problem);

// Shared by the two writers of the format, so that the same numbers give the same bytes.
// Row r of a 2-D float tensor as float32 (any strides).
void load_f32_row(const Tensor& t, std::int64_t r, float* out);
// Row r's stored codes of one group (int8 -128..127; int4 0..15) into a block's code bytes
// (block_codes: after its scales), at the row's runs (QuantizedLayout::code_offset): int8 as
// bytes; int4 code i in the low nibble of byte i and code i + G/2 in its high nibble.
void write_group_codes(const QuantizedLayout& layout, std::int64_t r, const int* codes,
                       std::uint8_t* block_codes);

}  // namespace tileops::ops::cpu
