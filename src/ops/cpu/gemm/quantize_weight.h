// quantize_weight and pack_quantized_codes on CPU (the format:
// src/ops/contracts/quantized_format.h).
#pragma once

#include <memory>

#include "tileops/ops/problem.h"
#include "tileops/ops/registry.h"

namespace tileops::ops::cpu {

std::unique_ptr<Operator> make_quantize_weight(const Problem& problem);
// pack_quantized_codes on CPU (pack_quantized_codes.cc).
std::unique_ptr<Operator> make_pack_quantized_codes(const Problem& problem);

}  // namespace tileops::ops::cpu
