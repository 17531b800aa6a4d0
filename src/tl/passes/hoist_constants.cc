// Constant canonicalisation: every constant moves to the top of the kernel, one op per distinct
// (dtype, value), in a fixed order. Constants have no operands, so hoisting is always valid; the
// point is that the IR (and its hash) no longer depends on the order in which C++ evaluated the
// arguments that created them, and loops do not rematerialise them per iteration.
#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

#include "src/tl/passes/passes.h"

namespace tileops::tl {
namespace {

using Key = std::tuple<int, std::int64_t, std::uint64_t>;

// The canonical order: by dtype, then value (a float's bits keep 0.0 and -0.0 apart).
Key key_of(const Op& op) {
  const ConstantAttrs& c = op.as<ConstantAttrs>();
  return {static_cast<int>(c.dtype), c.integer, std::bit_cast<std::uint64_t>(c.number.value)};
}

void collect(Region& region, std::map<Key, Op>& unique, std::map<int, int>& replace) {
  std::vector<Op> kept;
  for (Op& op : region.ops) {
    if (op.kind == OpKind::kConstant) {
      auto [it, inserted] = unique.emplace(key_of(op), op);
      if (!inserted) replace[op.results[0]] = it->second.results[0];
      continue;
    }
    for (Region& nested : op.regions) collect(nested, unique, replace);
    kept.push_back(std::move(op));
  }
  region.ops = std::move(kept);
}

void substitute(Region& region, const std::map<int, int>& replace) {
  auto fix = [&](int& id) {
    if (auto it = replace.find(id); it != replace.end()) id = it->second;
  };
  for (Op& op : region.ops) {
    for (int& id : op.operands) fix(id);
    for (Region& nested : op.regions) substitute(nested, replace);
  }
  for (int& id : region.yields) fix(id);
}

}  // namespace

void hoist_constants(Function& function) {
  std::map<Key, Op> unique;
  std::map<int, int> replace;
  collect(function.body, unique, replace);
  substitute(function.body, replace);
  std::vector<Op> ops;
  ops.reserve(unique.size() + function.body.ops.size());
  for (auto& [key, op] : unique) ops.push_back(std::move(op));
  for (Op& op : function.body.ops) ops.push_back(std::move(op));
  function.body.ops = std::move(ops);
}

}  // namespace tileops::tl
