// The CPU operator behind add and mul: out = input ∘ other with NumPy broadcasting, float32 math
// for the float dtypes and wrapping two's-complement math for the integers (int8, int16, int32,
// int64, uint8).
#pragma once

#include <memory>

#include "tileops/ops/registry.h"

namespace tileops::ops::cpu {

enum class Arithmetic { kAdd, kMul };

// problem: the tensors (input, other, out) validated by the add/mul contract.
std::unique_ptr<Operator> make_broadcast_arithmetic(const Problem& problem, Arithmetic op);

}  // namespace tileops::ops::cpu
