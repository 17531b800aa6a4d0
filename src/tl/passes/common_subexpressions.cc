// Common-subexpression elimination: a pure op whose kind, attributes, operands and result types
// equal those of an op that dominates it (earlier in the same region or in an enclosing one) is
// dropped and its results renamed to the earlier op's. Loads are not merged (a store between two
// loads of one tensor may change what the second reads), nor ops owning regions.
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "src/tl/passes/passes.h"

namespace tileops::tl {
namespace {

// Everything that decides an op's results; result types as text ("tile<8xf32>").
using Key = std::tuple<int, int, bool, int, std::vector<std::int64_t>, std::vector<std::int64_t>,
                       std::uint64_t, std::int64_t, std::vector<int>, std::string>;
using Table = std::map<Key, std::vector<int>>;

Key key_of(const Op& op, const Function& function) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &op.number, sizeof(bits));
  std::string result_types;
  for (int r : op.results) result_types += function.type_of(r).to_string() + ";";
  return {static_cast<int>(op.kind),
          op.sub,
          op.flag,
          static_cast<int>(op.dtype),
          op.ints,
          op.ints2,
          bits,
          op.integer,
          op.operands,
          std::move(result_types)};
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
      Key key = key_of(op, function);
      if (auto it = available.find(key); it != available.end()) {
        for (std::size_t i = 0; i < op.results.size(); ++i) rename[op.results[i]] = it->second[i];
        continue;
      }
      available.emplace(std::move(key), op.results);
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
