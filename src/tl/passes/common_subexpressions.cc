// Common-subexpression elimination: a pure op whose kind, attributes, operands and result types
// equal those of an op that dominates it (earlier in the same region or in an enclosing one) is
// dropped and its results renamed to the earlier op's. Loads are not merged (a store between two
// loads of one tensor may change what the second reads), nor ops owning regions.
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "src/tl/passes/passes.h"

namespace tileops::tl {
namespace {

// Ops are bucketed by kind, operands and result types (as text: "tile<8xf32>"); within a
// bucket, attributes are compared whole with their defaulted equality, so a new attribute can
// never be left out of the comparison.
using Bucket = std::tuple<OpKind, std::vector<int>, std::string>;
struct Seen {
  OpAttrs attrs;
  std::vector<int> results;
};
using Table = std::map<Bucket, std::vector<Seen>>;

Bucket bucket_of(const Op& op, const Function& function) {
  std::string result_types;
  for (int r : op.results) result_types += function.type_of(r).to_string() + ";";
  return {op.kind, op.operands, std::move(result_types)};
}

const std::vector<int>* find(const Table& table, const Bucket& bucket, const OpAttrs& attrs) {
  const auto it = table.find(bucket);
  if (it == table.end()) return nullptr;
  for (const Seen& seen : it->second) {
    if (seen.attrs == attrs) return &seen.results;
  }
  return nullptr;
}

bool mergeable(const Op& op) {
  return is_pure(op) && op.kind != OpKind::kLoad && op.regions.empty() && !op.results.empty();
}

// `available` holds the ops visible here; a nested region gets a copy, so what it defines does
// not leak to its siblings or to the ops after its owner.
void eliminate(Region& region, const Function& function, Table available,
               std::vector<int>& rename) {
  const auto fix = [&](int& id) { id = rename[id]; };
  std::vector<Op> kept;
  kept.reserve(region.ops.size());
  for (Op& op : region.ops) {
    for (int& id : op.operands) fix(id);
    for (Region& nested : op.regions) eliminate(nested, function, available, rename);
    if (mergeable(op)) {
      Bucket bucket = bucket_of(op, function);
      if (const std::vector<int>* earlier = find(available, bucket, op.attrs)) {
        for (std::size_t i = 0; i < op.results.size(); ++i) rename[op.results[i]] = (*earlier)[i];
        continue;
      }
      available[std::move(bucket)].push_back({op.attrs, op.results});
    }
    kept.push_back(std::move(op));
  }
  region.ops = std::move(kept);
  for (int& id : region.yields) fix(id);
}

}  // namespace

void eliminate_common_subexpressions(Function& function) {
  std::vector<int> rename(function.types.size());
  for (std::size_t i = 0; i < rename.size(); ++i) rename[i] = static_cast<int>(i);
  eliminate(function.body, function, Table{}, rename);
}

}  // namespace tileops::tl
