// IR passes. Each takes a verified Function and returns it transformed and still valid; the
// pipeline lists them in order in one place.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tileops/tl/ir.h"

namespace tileops::tl {

struct Pass {
  const char* name;
  std::function<void(Function&)> run;
};

// Moves every constant to the top of the kernel, deduplicated and in a canonical order.
void hoist_constants(Function& function);

// Replaces a pure op (not a load) that repeats an op in scope (same kind, attributes, operands
// and result types) by that op's results.
void eliminate_common_subexpressions(Function& function);

// Removes pure ops whose results are never used (nested regions included).
void eliminate_dead_code(Function& function);

// The passes run for `opt_level` (1..3), in order.
std::vector<Pass> pipeline(int opt_level);

}  // namespace tileops::tl
