// The cpu code generator's plan: what it decides about each value from the IR alone, before any
// code is printed. This slice holds the use analysis behind fusion, in-place updates and sinking
// (who defines and who uses each value, and where fusion chains end); the Emitter reads it and
// prints. See README.md for what still decides while printing.
#pragma once

#include <cstdint>
#include <vector>

#include "tileops/tl/ir.h"

namespace tileops::tl::cpu {

struct ValuePlan {
  const Op* def = nullptr;              // the op defining the value (nullptr for arguments)
  int uses = 0;                         // operand and yield uses
  const Op* last_user = nullptr;        // the last op using it
  std::vector<const Op*> users;         // every op using it, once per operand
  const Region* user_region = nullptr;  // the region of its last use
  // Every use is an elementwise op of its size in one region, which may each evaluate a cheap
  // expression of it instead of reading a materialised tile.
  bool elementwise_uses = false;
  bool carried = false;  // a loop-carried region argument
  // Some use reads it by name (not element by element): it must be a compute-typed array.
  bool raw_use = false;
  // The value whose loop evaluates this elementwise value when every op using it, and every op
  // using those, is fused: following same-size elementwise uses in one region while they lead
  // to a single value. The value itself when they do not (or when it has a use of another kind).
  int fusion_root = -1;
};

// One record per value of `function` (indexed by value id).
std::vector<ValuePlan> plan_values(const Function& function);

// The run length when reduction `reduce` reduces contiguous trailing runs of a float tile with a
// multi-accumulator loop (sum, mean, max, min), else 0.
std::int64_t suffix_run(const Function& function, const Op& reduce);

}  // namespace tileops::tl::cpu
