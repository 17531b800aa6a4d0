// quantize_weight on CPU (the format: src/ops/contracts/quantized_format.h).
#pragma once

#include <memory>

#include "tileops/ops/problem.h"
#include "tileops/ops/registry.h"

namespace tileops::ops::cpu {

std::unique_ptr<Operator> make_quantize_weight(const Problem& problem);

}  // namespace tileops::ops::cpu
