// Planning: how each load holds its tile (plan.h). A 16-bit float tile that every use reads
// element by element stays 16-bit. A tile held in its memory type may be read in place, a
// pointer into the tensor, when nothing written while it is live can clobber it: tensors stored
// to then must not overlap the loaded one (a run-time check, whose list this pass makes), and
// the loaded tensor itself may be stored to only as an in-place update (below). A float32 matmul
// operand (or bfloat16 bits, plan.h), or the tile whose transpose is a matmul's left operand, is
// read in place at any row stride. Inside a loop, a large tile read in place gets a cursor
// prefetching the next iteration's tile, and a copied one prefetches the next iteration's rows
// while it copies, unless the kernel places tl::prefetch hints itself.
#include <algorithm>
#include <optional>
#include <string_view>

#include "src/tl/cpu/codegen_types.h"
#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {
namespace {

bool uses_any(const Op& o, const std::vector<bool>& live) {
  for (int id : o.operands) {
    if (live[static_cast<std::size_t>(id)]) return true;
  }
  for (const Region& r : o.regions) {
    for (const Op& inner : r.ops) {
      if (uses_any(inner, live)) return true;
    }
    // A yield reads the value too (an if copies it into its result, or points its result at it).
    for (int id : r.yields) {
      if (live[static_cast<std::size_t>(id)]) return true;
    }
  }
  return false;
}

void stored_tensors(const Op& o, std::vector<int>& out) {
  if (o.kind == OpKind::kStore || o.kind == OpKind::kAtomic) out.push_back(o.operands[1]);
  for (const Region& r : o.regions) {
    for (const Op& inner : r.ops) stored_tensors(inner, out);
  }
}

// A float32 tile (or bfloat16 bits) whose only use is as an operand of a matmul: matmul_acc
// takes the row stride of each, so a load may read it in place from a tensor whose rows are not
// adjacent.
bool matmul_operand_only(const Function& f, const ValuePlan& p, int id) {
  const Op* u = p.last_user;
  return p.uses == 1 && u != nullptr && u->kind == OpKind::kMatmul &&
         (u->operands[0] == id || u->operands[1] == id) &&
         (f.type_of(id).dtype == DataType::kFloat32 || p.bits) && f.type_of(id).shape.size() == 2;
}

// A float32 tile whose only use is a transpose that a matmul reads as its left operand
// (transposed_lhs): matmul_acc reads it transposed, at its row stride, likewise in place.
bool transposed_matmul_lhs_only(const Function& f, const std::vector<ValuePlan>& plans, int id) {
  const ValuePlan& p = plans[static_cast<std::size_t>(id)];
  const Op* u = p.last_user;
  return p.uses == 1 && u != nullptr && u->kind == OpKind::kTranspose &&
         plans[static_cast<std::size_t>(u->results[0])].transposed_lhs &&
         f.type_of(id).dtype == DataType::kFloat32;
}

// For a float32 (or bfloat16 bits) load of more than two dims whose only use is a reshape to 2-D
// that keeps its last dim and drops only unit dims (at most one leading dim exceeds 1: the rows),
// where that reshape's only use is a matmul operand: the reshape's value id, else -1. The load is
// then read in place at the row dim's stride, as a 2-D one is (a kv head's key or value rows from
// [blocks, rows, heads, d]).
int reshaped_matmul_operand(const Function& f, const std::vector<ValuePlan>& plans, int id) {
  const ValuePlan& p = plans[static_cast<std::size_t>(id)];
  const Op* u = p.last_user;
  const Type& t = f.type_of(id);
  if (p.uses != 1 || u == nullptr || u->kind != OpKind::kReshape || t.shape.size() <= 2 ||
      (t.dtype != DataType::kFloat32 && !p.bits)) {
    return -1;
  }
  const int r = u->results[0];
  const Type& rt = f.type_of(r);
  int row_dims = 0;
  for (std::size_t d = 0; d + 1 < t.shape.size(); ++d) row_dims += t.shape[d] > 1 ? 1 : 0;
  if (row_dims > 1 || rt.shape.size() != 2 || rt.shape[1] != t.shape.back()) return -1;
  return matmul_operand_only(f, plans[static_cast<std::size_t>(r)], r) ? r : -1;
}

// Whether ops (load, last] of `r` update the loaded tile's memory in place: the last op using
// the tile (`live`: the values derived from it) stores, at the load's offsets, a tile of its
// shape computed elementwise (reductions of it complete first), which writes each element only
// after its last read.
bool updated_in_place(const Function& f, const Region& r, std::size_t load, std::size_t last,
                      const std::vector<bool>& live) {
  const Op& l = r.ops[load];
  const Op& s = r.ops[last];
  const std::int64_t size = f.type_of(l.results[0]).size();
  // The last use stores a tile of the loaded shape to the loaded tensor at the same offsets.
  if (s.kind != OpKind::kStore || s.operands[1] != l.operands[0] ||
      f.type_of(s.operands[0]).shape != f.type_of(l.results[0]).shape ||
      !std::equal(l.operands.begin() + 1, l.operands.end() - 1, s.operands.begin() + 2,
                  s.operands.begin() + 2 + static_cast<std::ptrdiff_t>(l.operands.size() - 2)))
    return false;
  for (std::size_t j = load + 1; j < last; ++j) {
    const Op& o = r.ops[j];
    std::vector<int> tensors;
    stored_tensors(o, tensors);
    if (std::find(tensors.begin(), tensors.end(), l.operands[0]) != tensors.end()) return false;
    if (!uses_any(o, live) || o.kind == OpKind::kReduce || o.kind == OpKind::kStore) continue;
    const bool elementwise = o.kind == OpKind::kUnary || o.kind == OpKind::kBinary ||
                             o.kind == OpKind::kWhere || o.kind == OpKind::kCast;
    // Same-shape results read element j for element j; one-element ones come from reductions.
    const std::int64_t n = f.type_of(o.results[0]).size();
    if (!elementwise || (n != size && n != 1)) return false;
  }
  return true;
}

class LoadPlanner {
 public:
  LoadPlanner(const Function& f, std::vector<ValuePlan>& plan)
      : f_(f), plan_(plan), emitted_(f.types.size(), false) {}

  void region(const Region& r) {
    const int hints = hints_;  // the hints of this region go out of scope with it
    for (std::size_t i = 0; i < r.ops.size(); ++i) op(r, i);
    hints_ = hints;
  }

 private:
  ValuePlan& at(int id) { return plan_[static_cast<std::size_t>(id)]; }

  // In the printer's order: a region's ops in turn, each op's regions when it is reached.
  void op(const Region& r, std::size_t i) {
    const Op& o = r.ops[i];
    switch (o.kind) {
      case OpKind::kTensor:
        emitted_[static_cast<std::size_t>(o.results[0])] = true;
        return;
      case OpKind::kPrefetch:
        ++hints_;
        return;
      case OpKind::kLoad:
        load(r, i);
        return;
      case OpKind::kFor:
        ++loop_depth_;
        region(o.regions[0]);
        --loop_depth_;
        return;
      default:
        for (const Region& inner : o.regions) region(inner);
        return;
    }
  }

  void load(const Region& r, std::size_t i) {
    const Op& o = r.ops[i];
    const int res = o.results[0];
    const Type& tt = f_.type_of(res);
    ValuePlan& p = at(res);
    p.widened = (tt.dtype == DataType::kFloat16 || tt.dtype == DataType::kBFloat16) && !p.raw_use;
    const std::string_view held =
        p.widened || p.bits ? memory_type(tt.dtype) : compute_type(tt.dtype);
    const std::int64_t bytes = tt.size() * static_cast<std::int64_t>(size_of(tt.dtype));
    // A kernel that places tl::prefetch hints (in scope, or later in this region) has taken
    // over prefetching.
    const bool hinted = hints_ > 0 || std::any_of(r.ops.begin(), r.ops.end(), [](const Op& op) {
                          return op.kind == OpKind::kPrefetch;
                        });
    p.next_rows_prefetch = loop_depth_ > 0 && bytes >= 1024 && !hinted;
    if (tt.dtype == DataType::kBool || held != memory_type(tt.dtype)) return;
    std::optional<std::vector<int>> hazards = direct_load_hazards(r, i);
    if (!hazards) return;
    p.read_in_place = true;
    p.overlap_checks = std::move(*hazards);
    p.any_row_stride =
        matmul_operand_only(f_, p, res) || transposed_matmul_lhs_only(f_, plan_, res);
    if (const int reshaped = reshaped_matmul_operand(f_, plan_, res); reshaped >= 0) {
      p.any_row_stride = true;
      at(reshaped).any_row_stride = true;  // the reshape passes the load's row stride on
    }
    // Smaller tiles: the hardware prefetcher suffices. The cursor covers contiguous bytes: not
    // for a tile whose rows may lie apart.
    p.next_tile_cursor = loop_depth_ > 0 && bytes >= 1024 && !p.any_row_stride && !hinted;
  }

  // For load r.ops[i]: the tensors stored to while its tile is live (which must not overlap the
  // loaded tensor for the tile to be read in place), or nullopt when the loaded tensor itself
  // is stored to then, unless as an in-place update (updated_in_place).
  std::optional<std::vector<int>> direct_load_hazards(const Region& r, std::size_t i) const {
    const Op& load = r.ops[i];
    // Everything derived from the loaded tile (a reshape aliases it, a fused expression reads it
    // where it is consumed) is live until the last op of the region that uses any of it, or to
    // the region's end when it is yielded.
    std::vector<bool> live(f_.types.size(), false);
    live[static_cast<std::size_t>(load.results[0])] = true;
    std::size_t last = i;
    for (std::size_t j = i + 1; j < r.ops.size(); ++j) {
      if (!uses_any(r.ops[j], live)) continue;
      for (int res : r.ops[j].results) live[static_cast<std::size_t>(res)] = true;
      last = j;
    }
    for (int y : r.yields) {
      if (live[static_cast<std::size_t>(y)]) last = r.ops.size() - 1;
    }
    std::vector<int> stored;
    for (std::size_t j = i + 1; j <= last && j < r.ops.size(); ++j)
      stored_tensors(r.ops[j], stored);
    const int tensor = load.operands[0];
    if (std::find(stored.begin(), stored.end(), tensor) != stored.end()) {
      if (!updated_in_place(f_, r, i, last, live)) return std::nullopt;  // written while live
      stored.erase(std::remove(stored.begin(), stored.end(), tensor), stored.end());
    }
    for (int t : stored) {
      // A tensor made after the load has no address range yet at the load.
      if (!emitted_[static_cast<std::size_t>(t)]) return std::nullopt;
    }
    return stored;
  }

  const Function& f_;
  std::vector<ValuePlan>& plan_;
  std::vector<bool> emitted_;  // tensors made so far (their address ranges are known)
  int hints_ = 0;              // tl::prefetch hints in scope
  int loop_depth_ = 0;
};

}  // namespace

void plan_loads(const Function& function, std::vector<ValuePlan>& values) {
  LoadPlanner(function, values).region(function.body);
}

}  // namespace tileops::tl::cpu
