// Dead-code elimination: drops pure ops whose results nobody reads, repeating until stable
// (removing one op can make its operands dead). Stores, atomics, loops and branches stay.
#include <vector>

#include "src/tl/passes/passes.h"

namespace tileops::tl {
namespace {

void count_uses(const Region& region, std::vector<int>& uses) {
  for (const Op& op : region.ops) {
    for (int id : op.operands) ++uses[id];
    for (const Region& nested : op.regions) count_uses(nested, uses);
  }
  for (int id : region.yields) ++uses[id];
}

bool sweep(Region& region, const std::vector<int>& uses) {
  bool changed = false;
  std::vector<Op> kept;
  kept.reserve(region.ops.size());
  for (Op& op : region.ops) {
    for (Region& nested : op.regions) changed = sweep(nested, uses) || changed;
    bool used = !is_pure(op);
    for (int r : op.results) used = used || uses[r] > 0;
    if (used) {
      kept.push_back(std::move(op));
    } else {
      changed = true;
    }
  }
  region.ops = std::move(kept);
  return changed;
}

}  // namespace

void eliminate_dead_code(Function& function) {
  for (bool changed = true; changed;) {
    std::vector<int> uses(function.types.size(), 0);
    count_uses(function.body, uses);
    changed = sweep(function.body, uses);
  }
}

}  // namespace tileops::tl
