// Planning: where an elementwise result computed in its own flat loop goes (plan.h). Over a
// loop-carried tile read only by it, of its type, it is written in place (each element is read
// before it is overwritten; the loop's yield copy is then skipped). A float32 row sum (or mean) of
// it is computed in the same loop (softmax: exp, then its sum), so the result is not read back.
// And the store of it, when that is its other use (sinkable_store), is that loop's too: the
// elements go to memory when its tile lies there contiguously (a run-time check). A matmul_acc's
// accumulator computed for it alone in the same region is added into in place.
#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {
namespace {

class SinkPlanner {
 public:
  SinkPlanner(const Function& f, std::vector<ValuePlan>& plan)
      : f_(f), plan_(plan), emitted_(f.types.size(), false) {}

  // In the printer's order.
  void region(const Region& r) {
    for (std::size_t i = 0; i < r.ops.size(); ++i) {
      const Op& o = r.ops[i];
      if (o.kind == OpKind::kTensor) emitted_[static_cast<std::size_t>(o.results[0])] = true;
      for (const Region& inner : o.regions) region(inner);
      const bool elementwise =
          o.kind == OpKind::kUnary || o.kind == OpKind::kBinary || o.kind == OpKind::kWhere;
      if (elementwise) producer(r, i);
      if (o.kind == OpKind::kMatmul) accumulator(r, i);
    }
  }

 private:
  ValuePlan& at(int id) { return plan_[static_cast<std::size_t>(id)]; }

  // The accumulator of matmul_acc r.ops[i], when an elementwise op or a matmul earlier in the
  // same region computed it into its own array for this use alone: the product adds into that
  // array instead of a copy of it (o · α + P·V in the tl attention).
  void accumulator(const Region& r, std::size_t i) {
    const Op& o = r.ops[i];
    if (!o.as<MatmulAttrs>().accumulate || o.operands.size() < 3) return;
    const int acc = o.operands[2];
    ValuePlan& p = at(acc);
    const Op* def = p.def;
    if (def == nullptr || p.uses != 1 || p.fused || p.consumable || p.sunk_store != nullptr ||
        f_.type_of(acc).kind != TypeKind::kTile) {
      return;
    }
    const bool computed = def->kind == OpKind::kUnary || def->kind == OpKind::kBinary ||
                          def->kind == OpKind::kWhere || def->kind == OpKind::kMatmul;
    for (std::size_t j = 0; j < i && computed; ++j) {
      if (&r.ops[j] == def) p.accumulated_in_place = true;
    }
  }

  void producer(const Region& r, std::size_t i) {
    const Op& o = r.ops[i];
    const int res = o.results[0];
    const Type& rt = f_.type_of(res);
    ValuePlan& p = at(res);
    if (rt.kind != TypeKind::kTile || p.fused || !is_flat(f_, o)) return;
    for (int id : o.operands) {
      const Type& t = f_.type_of(id);
      if (at(id).consumable && t.kind == TypeKind::kTile && t.dtype == rt.dtype &&
          t.shape == rt.shape) {
        p.in_place_operand = id;
        break;
      }
    }
    p.summed = sum_of(r, res);
    if (p.summed == nullptr) return;
    at(p.summed->results[0]).computed_by_producer = true;
    p.sunk_store = sinkable_store(r, i, res);
  }

  // A float32 row sum (or mean) of `id` in region `r`, which the loop producing `id` can compute
  // on the way (nullptr if none).
  const Op* sum_of(const Region& r, int id) const {
    if (f_.type_of(id).dtype != DataType::kFloat32) return nullptr;
    for (const Op& o : r.ops) {
      if (o.kind != OpKind::kReduce || o.operands[0] != id) continue;
      const ReduceOp op = o.as<ReduceAttrs>().op;
      if ((op == ReduceOp::kSum || op == ReduceOp::kMean) && suffix_run(f_, o) != 0) return &o;
    }
    return nullptr;
  }

  // The store of float32 tile `id` that its producer r.ops[i] (which also sums it) may write
  // straight to memory: the tile's only other use, later in the region, unmasked, its tensor
  // and offsets known before the producer, and no op between them reading or writing memory.
  // Loads whose tiles feed `id` read in place only when they do not overlap the stored tensor
  // (plan_loads.cc), so writing earlier clobbers nothing they read.
  const Op* sinkable_store(const Region& r, std::size_t i, int id) const {
    if (plan_[static_cast<std::size_t>(id)].uses != 2) return nullptr;
    auto defined_later = [&](int v) {  // by an op of this region from the producer on
      const Op* d = plan_[static_cast<std::size_t>(v)].def;
      return d != nullptr && d >= &r.ops[i] && d < r.ops.data() + r.ops.size();
    };
    for (std::size_t j = i + 1; j < r.ops.size(); ++j) {
      const Op& s = r.ops[j];
      if (s.kind == OpKind::kStore && s.operands[0] == id) {
        if (s.as<StoreAttrs>().masked || f_.type_of(s.operands[1]).dtype != DataType::kFloat32 ||
            !emitted_[static_cast<std::size_t>(s.operands[1])])
          return nullptr;
        for (std::size_t k = 1; k < s.operands.size(); ++k) {
          if (defined_later(s.operands[k])) return nullptr;
        }
        return &s;
      }
      const bool memory = s.kind == OpKind::kLoad || s.kind == OpKind::kStore ||
                          s.kind == OpKind::kAtomic || !s.regions.empty();
      if (memory) return nullptr;
    }
    return nullptr;
  }

  const Function& f_;
  std::vector<ValuePlan>& plan_;
  std::vector<bool> emitted_;  // tensors made so far
};

}  // namespace

void plan_sinks(const Function& function, std::vector<ValuePlan>& values) {
  SinkPlanner(function, values).region(function.body);
}

}  // namespace tileops::tl::cpu
