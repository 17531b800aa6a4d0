// Planning: tl::prefetch hints. A hint's cursor is advanced by the vector loops that follow it
// in its scope (the 64-lane blocks of row sums, the 32-lane blocks of float row maxima and
// minima, the 64-lane chunks of float32 and 16-bit stores), each by its share of the hinted tile,
// so that the fetch is spread over all of them. This pass sums, per hint, the lanes of those
// loops (of the larger branch of an if: one runs); a store that runs only when its tile was not
// sunk into its producer's loop does not count (it seldom runs).
#include <algorithm>
#include <limits>
#include <string_view>
#include <utility>

#include "src/tl/cpu/codegen_types.h"
#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {
namespace {

class HintPlanner {
 public:
  HintPlanner(const Function& f, const std::vector<ValuePlan>& plan) : f_(f), plan_(plan) {}

  void region(const Region& r) {
    const std::size_t hints = hints_.size();  // the hints of this region go out of scope with it
    for (const Op& o : r.ops) op(o);
    hints_.resize(hints);
  }

  std::map<const Op*, std::int64_t> work() && { return std::move(work_); }

 private:
  const ValuePlan& at(int id) const { return plan_[static_cast<std::size_t>(id)]; }

  // In the printer's order, each loop where it is printed.
  void op(const Op& o) {
    switch (o.kind) {
      case OpKind::kPrefetch:
        hints_.push_back(&o);
        return;
      case OpKind::kFor:
        region(o.regions[0]);
        return;
      case OpKind::kIf: {
        const std::map<const Op*, std::int64_t> before = work_;
        std::map<const Op*, std::int64_t> most = before;
        for (const Region& branch : o.regions) {
          region(branch);
          for (const auto& [hint, work] : work_) most[hint] = std::max(most[hint], work);
          work_ = before;
        }
        work_ = std::move(most);
        return;
      }
      case OpKind::kUnary:
      case OpKind::kBinary:
      case OpKind::kWhere:
        if (const Op* r = at(o.results[0]).summed; r != nullptr) sum_loop(*r);
        return;
      case OpKind::kReduce:
        reduce(o);
        return;
      case OpKind::kStore:
      case OpKind::kAtomic:
        store(o);
        return;
      default:
        return;
    }
  }

  // A row sum's 64-lane blocks (float compute type only).
  void sum_loop(const Op& r) {
    const Type& xt = f_.type_of(r.operands[0]);
    const std::int64_t count = suffix_run(f_, r);
    const bool vec = std::string_view(compute_type(xt.dtype)) == "float";
    if (vec && count - count % 64 > 0) advance(xt.size());
  }

  void reduce(const Op& o) {
    if (at(o.results[0]).computed_by_producer || suffix_run(f_, o) == 0) return;
    const ReduceOp op = o.as<ReduceAttrs>().op;
    if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
      sum_loop(o);
      return;
    }
    const Type& xt = f_.type_of(o.operands[0]);
    if (std::string_view(compute_type(xt.dtype)) == "float") advance(xt.size());
  }

  void store(const Op& o) {
    const Type& vt = f_.type_of(o.operands[0]);
    if (vt.kind != TypeKind::kTile || at(o.operands[0]).sunk_store == &o) return;
    const DataType d = f_.type_of(o.operands[1]).dtype;
    const bool vector =
        d == DataType::kFloat32 || d == DataType::kFloat16 || d == DataType::kBFloat16;
    if (o.kind == OpKind::kStore && vector) advance(vt.size());
  }

  // A loop over `total` lanes advances every hint in scope.
  void advance(std::int64_t total) {
    for (const Op* hint : hints_) {
      std::int64_t& w = work_[hint];  // saturating: a sum of tile sizes
      if (__builtin_add_overflow(w, total, &w)) w = std::numeric_limits<std::int64_t>::max();
    }
  }

  const Function& f_;
  const std::vector<ValuePlan>& plan_;
  std::vector<const Op*> hints_;  // in scope
  std::map<const Op*, std::int64_t> work_;
};

}  // namespace

std::map<const Op*, std::int64_t> plan_hints(const Function& function,
                                             const std::vector<ValuePlan>& values) {
  HintPlanner planner(function, values);
  planner.region(function.body);
  return std::move(planner).work();
}

std::int64_t hint_lines(std::int64_t bytes, std::int64_t lanes, std::int64_t work) {
  work = std::max<std::int64_t>(work, 1);
  const __int128 share = (static_cast<__int128>(bytes) * lanes + work - 1) / work;
  return static_cast<std::int64_t>(std::clamp<__int128>((share + 63) / 64, 1, 4));
}

}  // namespace tileops::tl::cpu
