// Planning: fusion. An elementwise result (or cast) whose single use is another elementwise op
// of the same region, of its size, a float row sum or mean (the multi-accumulator loop), or the
// stored value of a store, is not materialised: its consumer evaluates its expression at each
// index (elements.h). A `cheap` expression (a conversion) is also fused when its uses are several
// operands of one op (x * x), and a widening one (a 16-bit float read as float) into several
// elementwise ops. Several uses are fused as well when they all end up in one expression (the
// plan's fusion_root): the polynomial of a hand-written exp uses its argument four times; the
// C++ compiler evaluates the repeated subexpression once. Expressions longer than kMaxExpression
// characters are materialised instead (they would grow with every fused use).
#include <algorithm>

#include "src/tl/cpu/elements.h"
#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {
namespace {

constexpr std::size_t kMaxExpression = 2000;

class FusionPlanner {
 public:
  FusionPlanner(const Function& f, std::vector<ValuePlan>& plan)
      : f_(f), plan_(plan), elements_(f, plan) {}

  // In the printer's order: an op's operands are planned before it.
  void region(const Region& r) {
    for (const Op& o : r.ops) {
      for (const Region& inner : o.regions) region(inner);
      op(r, o);
    }
  }

 private:
  ValuePlan& at(int id) { return plan_[static_cast<std::size_t>(id)]; }

  void op(const Region& r, const Op& o) {
    const bool elementwise =
        o.kind == OpKind::kUnary || o.kind == OpKind::kBinary || o.kind == OpKind::kWhere;
    if (!elementwise && o.kind != OpKind::kCast) return;
    const int res = o.results[0];
    if (f_.type_of(res).kind != TypeKind::kTile) return;
    if (elementwise) {
      if (is_flat(f_, o)) at(res).fused = fusible(r, o, false, false);
      return;
    }
    const Type& xt = f_.type_of(o.operands[0]);
    if (xt.kind != TypeKind::kTile) return;
    const DataType s = xt.dtype, d = f_.type_of(res).dtype;
    const bool widening = is_floating(s) && is_floating(d) && size_of(d) > size_of(s);
    at(res).fused = fusible(r, o, true, widening);
  }

  // Whether the result of `o`, an op of region `r`, is evaluated where it is used.
  bool fusible(const Region& r, const Op& o, bool cheap, bool widening) const {
    const int id = o.results[0];
    const ValuePlan& p = plan_[static_cast<std::size_t>(id)];
    const Op* user = p.last_user;
    if (user == nullptr || p.user_region != &r) return false;
    if (p.uses != 1) {
      const auto in_user = std::count(user->operands.begin(), user->operands.end(), id);
      const bool cheap_ok = cheap && (in_user == p.uses || (widening && p.elementwise_uses));
      if (!cheap_ok && p.fusion_root == id) return false;
    }
    switch (user->kind) {
      case OpKind::kUnary:
      case OpKind::kBinary:
      case OpKind::kWhere:
      case OpKind::kCast:
        // Not into a broadcast: the expression would be evaluated once per element of the user.
        if (f_.type_of(user->results[0]).size() != f_.type_of(id).size()) return false;
        break;
      case OpKind::kReduce:  // its accumulation loop evaluates the expression
        if (suffix_run(f_, *user) == 0) return false;
        break;
      case OpKind::kStore:  // its row loop evaluates the expression (the stored value)
        if (user->operands[0] != id || f_.type_of(id).kind != TypeKind::kTile) return false;
        break;
      default:
        return false;
    }
    // Measured with a placeholder index of three characters (the printer's expression with it).
    return elements_.of(o, "@K@").size() <= kMaxExpression;
  }

  const Function& f_;
  std::vector<ValuePlan>& plan_;
  const Elements elements_;  // reads the plan as it is made: operands are decided first
};

// Appends the widened tiles read at the lane index by the expression of `id` (`lane`: this
// expression is read at it), in the order the printed expression reads them.
void lane_reads(const Function& f, const std::vector<ValuePlan>& values, int id, bool lane,
                std::vector<int>& out);

void lane_reads_of_op(const Function& f, const std::vector<ValuePlan>& values, const Op& o,
                      bool lane, std::vector<int>& out) {
  if (o.kind == OpKind::kCast) {
    const int x = o.operands[0];
    // A bitcast of a widened tile reads its 16-bit bits, not a float.
    if (o.as<CastAttrs>().bitcast && values[static_cast<std::size_t>(x)].widened) return;
    lane_reads(f, values, x, lane, out);
    return;
  }
  const Type& rt = f.type_of(o.results[0]);
  for (int id : o.operands) {
    lane_reads(f, values, id, lane && flat_read(f, id, rt) != FlatRead::kFirst, out);
  }
}

void lane_reads(const Function& f, const std::vector<ValuePlan>& values, int id, bool lane,
                std::vector<int>& out) {
  const ValuePlan& p = values[static_cast<std::size_t>(id)];
  if (p.widened) {
    if (lane && std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  } else if (p.fused) {
    lane_reads_of_op(f, values, *p.def, lane, out);
  }
}

std::vector<int> bfloat16_first(const Function& f, std::vector<int> tiles) {
  std::stable_partition(tiles.begin(), tiles.end(),
                        [&](int id) { return f.type_of(id).dtype == DataType::kBFloat16; });
  return tiles;
}

}  // namespace

void plan_fusion(const Function& function, std::vector<ValuePlan>& values) {
  FusionPlanner(function, values).region(function.body);
}

std::vector<int> lane_blocks(const Function& function, const std::vector<ValuePlan>& values,
                             int id) {
  std::vector<int> tiles;
  lane_reads(function, values, id, true, tiles);
  return bfloat16_first(function, std::move(tiles));
}

std::vector<int> lane_blocks_of_op(const Function& function, const std::vector<ValuePlan>& values,
                                   const Op& o) {
  std::vector<int> tiles;
  lane_reads_of_op(function, values, o, true, tiles);
  return bfloat16_first(function, std::move(tiles));
}

}  // namespace tileops::tl::cpu
