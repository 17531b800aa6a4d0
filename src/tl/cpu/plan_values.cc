// Planning: the use analysis of every value (plan.h), the first pass: what the others read.
#include <algorithm>
#include <cstddef>

#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {
namespace {

bool is_elementwise(OpKind kind) {
  return kind == OpKind::kUnary || kind == OpKind::kBinary || kind == OpKind::kWhere ||
         kind == OpKind::kCast;
}

// Whether `o` reads its operand `index` element by element (the printer's at()), so that a
// fused expression or a widened 16-bit tile can stand in for it.
bool reads_elementwise(const Function& f, const Op& o, std::size_t index) {
  switch (o.kind) {
    case OpKind::kUnary:
    case OpKind::kBinary:
    case OpKind::kWhere:
    case OpKind::kCast:
    case OpKind::kBroadcast:
    case OpKind::kTranspose:
    case OpKind::kSlice:
      return true;
    case OpKind::kStore:
    case OpKind::kAtomic:
      return index == 0;
    case OpKind::kReduce:
      return suffix_run(f, o) != 0;
    default:
      return false;
  }
}

class Planner {
 public:
  explicit Planner(const Function& f) : f_(f), plan_(f.types.size()) {}

  std::vector<ValuePlan> run() {
    count_uses(f_.body);
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      const int id = static_cast<int>(i);
      fusion_root(id);
      ValuePlan& v = at(id);
      v.consumable = v.carried && v.uses == 1;
      v.fills_loop = v.def != nullptr && v.def->kind == OpKind::kFull &&
                     f_.type_of(id).kind == TypeKind::kTile && v.uses == 1 &&
                     v.last_user != nullptr && v.last_user->kind == OpKind::kFor;
      v.nonnegative = v.def != nullptr && v.def->kind == OpKind::kUnary &&
                      (v.def->as<UnaryAttrs>().op == UnaryOp::kExp ||
                       v.def->as<UnaryAttrs>().op == UnaryOp::kExp2);
      if (transposed_lhs(id)) {
        v.transposed_lhs = true;
        at(v.def->operands[0]).raw_use = true;  // read by the matmul as a float array
      }
    }
    mark_bits();
    return std::move(plan_);
  }

 private:
  ValuePlan& at(int id) { return plan_[static_cast<std::size_t>(id)]; }

  void count_uses(const Region& r) {
    for (const Op& o : r.ops) {
      for (int id : o.results) at(id).def = &o;
      for (std::size_t k = 0; k < o.operands.size(); ++k) {
        const int id = o.operands[k];
        ValuePlan& v = at(id);
        if (!reads_elementwise(f_, o, k)) v.raw_use = true;
        const bool elementwise =
            is_elementwise(o.kind) && f_.type_of(o.results[0]).size() == f_.type_of(id).size();
        v.elementwise_uses =
            (v.uses == 0 || (v.elementwise_uses && v.user_region == &r)) && elementwise;
        ++v.uses;
        v.last_user = &o;
        v.users.push_back(&o);
        v.user_region = &r;
      }
      for (const Region& inner : o.regions) count_uses(inner);
      if (o.kind == OpKind::kFor) {
        const Region& body = o.regions[0];
        for (std::size_t c = 1; c < body.args.size(); ++c) at(body.args[c]).carried = true;
      }
    }
    for (int id : r.yields) {
      ValuePlan& v = at(id);
      v.elementwise_uses = false;
      ++v.uses;
      v.raw_use = true;
    }
  }

  // The bfloat16 tiles held as bits (plan.h): the largest set of loads, reshapes and concats
  // whose operands (of a reshape or concat) are all in the set and whose every use takes bits:
  // a matmul's a or b (a bfloat16 matmul's both are), or a reshape or concat in the set. Found by
  // removing what breaks a rule until nothing does.
  void mark_bits() {
    std::vector<bool> in(plan_.size(), false);
    for (std::size_t i = 0; i < plan_.size(); ++i) {
      const ValuePlan& v = plan_[i];
      const Type& t = f_.type_of(static_cast<int>(i));
      in[i] = t.kind == TypeKind::kTile && t.dtype == DataType::kBFloat16 && v.def != nullptr &&
              (v.def->kind == OpKind::kLoad || v.def->kind == OpKind::kReshape ||
               v.def->kind == OpKind::kConcat) &&
              v.uses > 0;
    }
    const auto member = [&](int id) { return in[static_cast<std::size_t>(id)]; };
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < plan_.size(); ++i) {
        if (!in[i]) continue;
        const int id = static_cast<int>(i);
        const ValuePlan& v = plan_[i];
        const bool operands = v.def->kind == OpKind::kLoad ||
                              std::all_of(v.def->operands.begin(), v.def->operands.end(), member);
        // Yields count as uses but are no users: a yielded tile is read as values.
        const bool users = v.uses == static_cast<int>(v.users.size()) &&
                           std::all_of(v.users.begin(), v.users.end(), [&](const Op* u) {
                             if (u->kind == OpKind::kMatmul) {
                               return u->operands[0] == id || u->operands[1] == id;
                             }
                             return (u->kind == OpKind::kReshape || u->kind == OpKind::kConcat) &&
                                    member(u->results[0]);
                           });
        if (!operands || !users) in[i] = false, changed = true;
      }
    }
    for (std::size_t i = 0; i < plan_.size(); ++i) plan_[i].bits = in[i];
  }

  // xᵀ used once, as the left operand of a matmul accumulating in float (not float64, whose
  // loop indexes its operands itself), x a 2-D tile held as floats.
  bool transposed_lhs(int id) {
    const ValuePlan& v = at(id);
    const Op* u = v.last_user;
    if (v.def == nullptr || v.def->kind != OpKind::kTranspose || v.uses != 1 || u == nullptr ||
        u->kind != OpKind::kMatmul || u->operands[0] != id || u->operands[1] == id)
      return false;
    const Type& xt = f_.type_of(v.def->operands[0]);
    const DataType d = xt.dtype;
    return xt.kind == TypeKind::kTile && xt.shape.size() == 2 &&
           (d == DataType::kFloat32 || d == DataType::kFloat16 || d == DataType::kBFloat16);
  }

  int fusion_root(int id) {
    ValuePlan& v = at(id);
    if (v.fusion_root >= 0) return v.fusion_root;
    v.fusion_root = id;  // also while the users are visited (the IR has no cycles)
    if (v.uses == 0 || !v.elementwise_uses) return id;
    int root = -1;
    for (const Op* u : v.users) {
      const int r = fusion_root(u->results[0]);
      if (root >= 0 && r != root) return id;
      root = r;
    }
    at(id).fusion_root = root;
    return root;
  }

  const Function& f_;
  std::vector<ValuePlan> plan_;
};

}  // namespace

std::vector<ValuePlan> plan_values(const Function& function) { return Planner(function).run(); }

std::int64_t suffix_run(const Function& function, const Op& reduce) {
  const Type& xt = function.type_of(reduce.operands[0]);
  const ReduceAttrs& attrs = reduce.as<ReduceAttrs>();
  const ReduceOp op = attrs.op;
  if (xt.kind != TypeKind::kTile) return 0;
  const bool extreme = op == ReduceOp::kMax || op == ReduceOp::kMin;
  // Integer maxima and minima are exact in any order; integer sums keep the interpreter's loop.
  if (!extreme && (!is_floating(xt.dtype) || (op != ReduceOp::kSum && op != ReduceOp::kMean)))
    return 0;
  const std::size_t rank = xt.shape.size();
  std::vector<bool> reduced(rank, attrs.dims.empty());
  for (std::int64_t d : attrs.dims) reduced[d < 0 ? d + static_cast<std::int64_t>(rank) : d] = true;
  std::int64_t count = 1;
  bool seen_reduced = false;
  for (std::size_t d = 0; d < rank; ++d) {
    if (reduced[d]) seen_reduced = true;
    if (seen_reduced && !reduced[d] && xt.shape[d] != 1) return 0;
    if (reduced[d]) count *= xt.shape[d];
  }
  return count;
}

}  // namespace tileops::tl::cpu
