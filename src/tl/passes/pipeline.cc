// The pass pipeline: which IR passes run, in which order, at each optimisation level.
#include "src/tl/passes/passes.h"

namespace tileops::tl {

std::vector<Pass> pipeline(int opt_level) {
  std::vector<Pass> passes;
  // Always: the IR (and so its hash, the cache key) must not depend on the order in which C++
  // evaluated the arguments that created constants.
  passes.push_back({"hoist-constants", hoist_constants});
  if (opt_level >= 1) {
    // After hoisting, so that equal constants are one value and the ops using them compare equal.
    passes.push_back({"common-subexpressions", eliminate_common_subexpressions});
    // Last: merging leaves the duplicates' operands (and unused traced values) dead.
    passes.push_back({"dead-code", eliminate_dead_code});
  }
  return passes;
}

}  // namespace tileops::tl
