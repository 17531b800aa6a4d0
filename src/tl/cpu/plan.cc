// The planning pipeline of the cpu code generator (plan.h): each pass reads the records of the
// ones before it, and the printer reads the finished plan.
#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {

KernelPlan plan_kernel(const Function& function) {
  KernelPlan plan;
  plan.values = plan_values(function);
  plan_loads(function, plan.values);   // kept 16-bit or not: the size of fused expressions
  plan_fusion(function, plan.values);  // fused results have no loop of their own
  plan_sinks(function, plan.values);   // sums and stores in the loops that remain
  plan.hint_work = plan_hints(function, plan.values);
  return plan;
}

FlatRead flat_read(const Function& function, int id, const Type& result) {
  const Type& t = function.type_of(id);
  if (t.kind != TypeKind::kTile) return FlatRead::kSame;
  if (t.size() == 1) return FlatRead::kFirst;
  auto strip = [](const std::vector<std::int64_t>& shape) {  // leading ones
    std::size_t d = 0;
    while (d + 1 < shape.size() && shape[d] == 1) ++d;
    return std::vector<std::int64_t>(shape.begin() + static_cast<std::ptrdiff_t>(d), shape.end());
  };
  return strip(t.shape) == strip(result.shape) ? FlatRead::kSame : FlatRead::kStrided;
}

bool is_flat(const Function& function, const Op& o) {
  const Type& rt = function.type_of(o.results[0]);
  for (int id : o.operands) {
    if (flat_read(function, id, rt) == FlatRead::kStrided) return false;
  }
  return true;
}

}  // namespace tileops::tl::cpu
