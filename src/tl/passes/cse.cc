// Common-subexpression elimination: a pure op that computes what an op already in scope computed
// (same kind, attributes, operands and result types) is dropped and its results replaced by the
// earlier ones. Scopes follow regions: an op may reuse one from an enclosing region, never one
// from a sibling. Loads are left alone (a store between two loads may change what they read), and
// so are ops with regions.
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "src/tl/passes/passes.h"

namespace tileops::tl {
namespace {

std::string key_of(const Function& f, const Op& op) {
  std::ostringstream k;
  std::uint64_t bits = 0;
  std::memcpy(&bits, &op.number, sizeof(bits));  // -0 and NaN payloads stay distinct
  k << static_cast<int>(op.kind) << '/' << static_cast<int>(op.sub) << '/' << op.flag << '/'
    << static_cast<int>(op.dtype) << '/' << bits << '/' << op.integer << '/';
  for (std::int64_t v : op.ints) k << v << ',';
  k << '/';
  for (std::int64_t v : op.ints2) k << v << ',';
  k << '/';
  for (int id : op.operands) k << id << ',';
  k << '/';
  for (int id : op.results) k << f.type_of(id).to_string() << ',';
  return k.str();
}

bool eligible(const Op& op) {
  return is_pure(op) && op.regions.empty() && op.kind != OpKind::kLoad && !op.results.empty();
}

// `available`: ops of enclosing regions and earlier ops of this one, by key.
void cse_region(const Function& f, Region& region,
                std::map<std::string, std::vector<int>> available, std::vector<int>& replace) {
  auto fix = [&](int& id) { id = replace[static_cast<std::size_t>(id)]; };
  std::vector<Op> kept;
  kept.reserve(region.ops.size());
  for (Op& op : region.ops) {
    for (int& id : op.operands) fix(id);
    for (Region& nested : op.regions) cse_region(f, nested, available, replace);
    if (eligible(op)) {
      const std::string key = key_of(f, op);
      const auto it = available.find(key);
      if (it != available.end()) {
        for (std::size_t i = 0; i < op.results.size(); ++i)
          replace[static_cast<std::size_t>(op.results[i])] = it->second[i];
        continue;
      }
      available.emplace(key, op.results);
    }
    kept.push_back(std::move(op));
  }
  region.ops = std::move(kept);
  for (int& id : region.yields) fix(id);
}

}  // namespace

void eliminate_common_subexpressions(Function& function) {
  std::vector<int> replace(function.types.size());
  for (std::size_t i = 0; i < replace.size(); ++i) replace[i] = static_cast<int>(i);
  cse_region(function, function.body, {}, replace);
}

}  // namespace tileops::tl
