// Builder: runtime loops (tl::range) and branches (tl::if_). Live tl::Vars become loop-carried
// values / branch results: on entry every Var is rebound to a fresh region argument; on exit the
// ones the body did not reassign are substituted back by their outer value and dropped.
#include "tileops/tl/control.h"

#include <algorithm>

#include "src/tl/builder/tracer.h"
#include "tileops/tl/ops.h"

namespace tileops::tl {
namespace {

void substitute(Region& region, int from, int to) {
  for (Op& op : region.ops) {
    for (int& id : op.operands) id = id == from ? to : id;
    for (Region& nested : op.regions) substitute(nested, from, to);
  }
  for (int& id : region.yields) id = id == from ? to : id;
}

struct Carried {
  Var* var;  // null once destroyed; `last` is then its final id
  int init;
  int arg;
  int last = -1;
};

// Vars of the loops being traced, innermost last (a Range object may not move).
thread_local std::vector<std::vector<Carried>> g_carried;
// The branches open on this thread.
thread_local std::vector<Branch*> g_branches;

// Two values that meet as a loop-carried value or a branch result: a number (a weak constant)
// takes the dtype of the scalar on the other side, as in an expression (`s = 1` where `s` is a
// float32 sum); two numbers take the floating one's. The converted constant is made in the
// current (enclosing) region, which every use dominates.
void adopt_numbers(Tracer& t, int& a, int& b, const Loc& loc) {
  const Type ta = t.type_of(a);
  const Type tb = t.type_of(b);
  if (ta == tb || ta.kind != TypeKind::kScalar || tb.kind != TypeKind::kScalar) return;
  const bool wa = t.is_weak(a);
  const bool wb = t.is_weak(b);
  if (wa && !wb) {
    a = coerce(t, a, tb.dtype, loc);
  } else if (wb && !wa) {
    b = coerce(t, b, ta.dtype, loc);
  } else if (wa && wb) {
    const DataType dtype = is_floating(ta.dtype) ? ta.dtype : tb.dtype;
    a = coerce(t, a, dtype, loc);
    b = coerce(t, b, dtype, loc);
  }
}

}  // namespace

void forget_var(const Var* var) {
  for (std::vector<Carried>& level : g_carried) {
    for (Carried& c : level) {
      if (c.var == var) {
        c.last = c.var->id();
        c.var = nullptr;
      }
    }
  }
  for (Branch* b : g_branches) b->forget(var);
}

Range::Range(const Operand& start, const Operand& stop, const Operand& step, RangeOptions options,
             Loc loc)
    : loc_(loc) {
  Tracer& t = Tracer::current("range", loc);
  if (options.unroll_factor < 1) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "range",
                "unroll_factor must be >= 1, got " + std::to_string(options.unroll_factor));
  }
  const int ids[] = {index_value(t, start, "range"), index_value(t, stop, "range"),
                     index_value(t, step, "range")};
  if (const auto s = t.constant_value(ids[2]); s && *s == 0) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "range", "step must not be 0");
  }
  bounds_[0] = ids[0];
  bounds_[1] = ids[1];
  bounds_[2] = ids[2];
  unroll_ = options.unroll_factor;
  parallel_ = options.parallel;
}

Range::~Range() {
  if (depth_ >= 0 && !closed_) {
    if (Tracer* t = Tracer::active()) {
      t->set_broken("tl: " + to_loc(loc_).to_string() +
                    ": 'range': the loop body was left early (break, return or an exception); "
                    "runtime loops have no early exit");
    }
    if (!g_carried.empty()) g_carried.pop_back();
  }
}

Range::Iterator Range::begin() {
  Tracer& t = Tracer::current("range", loc_);
  induction_ = Value::from_id(t.new_value(Type{TypeKind::kScalar, DataType::kInt64, {}}));
  std::vector<int> args = {induction_.id()};
  std::vector<Carried> carried;
  for (Var* v : t.vars()) {
    if (!v->valid()) continue;  // an unset Var has nothing to carry
    const int arg = t.new_value(t.type_of(v->id()));
    carried.push_back({v, v->id(), arg});
    args.push_back(arg);
    v->rebind(arg);
  }
  g_carried.push_back(std::move(carried));
  t.open_region(std::move(args));
  depth_ = t.depth();
  return Iterator(this);
}

void Range::close() {
  Tracer& t = Tracer::current("range", loc_);
  closed_ = true;
  std::vector<Carried> carried = std::move(g_carried.back());
  g_carried.pop_back();
  if (t.depth() != depth_) {
    t.set_broken("tl: " + to_loc(loc_).to_string() +
                 ": 'range': a nested loop or branch was left early");
    t.check_not_broken();
  }
  Region body = t.close_region();
  Op op = make_op(OpKind::kFor, loc_);
  op.operands = {bounds_[0], bounds_[1], bounds_[2]};
  op.attrs = ForAttrs{.unroll = unroll_, .parallel = parallel_};
  std::vector<int> args = {body.args[0]};
  std::vector<Var*> changed;
  for (const Carried& c : carried) {
    int now = c.var != nullptr ? c.var->id() : c.last;
    if (now != c.arg && t.is_weak(now)) {  // a number set in the body takes the carried type
      int arg = c.arg;
      adopt_numbers(t, arg, now, loc_);
    }
    if (now == c.arg) {
      substitute(body, c.arg, c.init);  // not reassigned: not carried
      if (c.var != nullptr) c.var->rebind(c.init);
      continue;
    }
    args.push_back(c.arg);
    op.operands.push_back(c.init);
    body.yields.push_back(now);
    changed.push_back(c.var);  // null: destroyed in the body, its result unused
  }
  body.args = std::move(args);
  op.regions.push_back(std::move(body));
  const std::vector<int> results = t.append(std::move(op));
  for (std::size_t i = 0; i < changed.size(); ++i) {
    if (changed[i] != nullptr) changed[i]->rebind(results[i]);
  }
}

Range range(const Operand& stop, Loc loc) { return Range(0, stop, 1, {}, loc); }

Range range(const Operand& start, const Operand& stop, const Operand& step, RangeOptions options,
            Loc loc) {
  return Range(start, stop, step, options, loc);
}

Branch::Branch(const Operand& cond, Loc loc) : loc_(loc) {
  Tracer& t = Tracer::current("if_", loc);
  cond_ = cond.value.id();
  const Type& ct = t.type_of(cond_);
  if (ct.kind != TypeKind::kScalar) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "if_",
                "condition must be a scalar, got " + ct.to_string());
  }
  if (ct.dtype != DataType::kBool) cond_ = binary(BinaryOp::kNe, cond.value, 0, loc).id();
  for (Var* v : t.vars()) {
    if (v->valid()) before_.emplace_back(v, v->id());
  }
  depth_ = t.depth();
  g_branches.push_back(this);
}

Branch::~Branch() {
  g_branches.erase(std::remove(g_branches.begin(), g_branches.end(), this), g_branches.end());
}

void Branch::forget(const Var* var) {
  for (auto& entry : before_) {
    if (entry.first == var) entry.first = nullptr;
  }
}

void Branch::begin() { Tracer::current("if_", loc_).open_region({}); }

Region Branch::end() {
  Tracer& t = Tracer::current("if_", loc_);
  if (t.depth() != depth_ + 1) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc_), "if_", "a loop was left early");
  }
  return t.close_region();
}

void Branch::then_begin() { begin(); }
void Branch::else_begin() { begin(); }

void Branch::adopt(Var& var) {
  before_.emplace_back(&var, -1);
  if (then_done_) then_ids_.push_back(-1);  // adopted in the else branch: then never set it
}

void Branch::then_end() {
  then_ = end();
  then_done_ = true;
  then_ids_.clear();
  for (auto& [v, id] : before_) {
    then_ids_.push_back(v != nullptr ? v->id() : -1);
    if (v != nullptr) v->rebind(id);
  }
}

void Branch::else_end() {
  has_else_ = true;
  else_ = end();
  else_ids_.clear();
  for (auto& [v, id] : before_) {
    else_ids_.push_back(v != nullptr ? v->id() : -1);
    if (v != nullptr) v->rebind(id);
  }
}

void Branch::finish() {
  Tracer& t = Tracer::current("if_", loc_);
  if (else_ids_.empty()) {  // no else branch: every Var keeps its value
    for (auto& [v, id] : before_) else_ids_.push_back(id);
  }
  Op op = make_op(OpKind::kIf, loc_);
  op.operands = {cond_};
  Region then_region = then_, else_region = else_;  // kept for reopen_else
  std::vector<Var*> changed;
  for (std::size_t i = 0; i < before_.size(); ++i) {
    if (before_[i].first == nullptr) continue;  // destroyed while the branch was open
    if (then_ids_[i] == before_[i].second && else_ids_[i] == before_[i].second) continue;
    if (then_ids_[i] < 0 || else_ids_[i] < 0) continue;  // adopted, set on one path only
    adopt_numbers(t, then_ids_[i], else_ids_[i], loc_);
    then_region.yields.push_back(then_ids_[i]);
    else_region.yields.push_back(else_ids_[i]);
    changed.push_back(before_[i].first);
  }
  op.regions.push_back(std::move(then_region));
  op.regions.push_back(std::move(else_region));
  const std::vector<int> results = t.append(std::move(op));
  position_ = t.region_size() - 1;
  finished_ = true;
  for (std::size_t i = 0; i < changed.size(); ++i) changed[i]->rebind(results[i]);
}

void Branch::reopen_else(Loc loc) {
  Tracer& t = Tracer::current("else_", loc);
  if (!finished_ || has_else_ || t.depth() != depth_ || t.region_size() != position_ + 1) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "else_",
                "must directly follow its if_ block (nothing traced in between, one else)");
  }
  t.pop_last_op();
  for (auto& [v, id] : before_) {
    if (v != nullptr) v->rebind(id);  // the else branch sees the values before the if
  }
  else_ids_.clear();
  finished_ = false;
}

// NOLINTNEXTLINE(readability-identifier-naming): `if` is a keyword
void if_(const Operand& cond, const std::function<void()>& then_branch,
         const std::function<void()>& else_branch, Loc loc) {
  Tracer& t = Tracer::current("if_", loc);
  if (const auto value = t.constant_value(cond.value.id());
      value && t.type_of(cond.value.id()).kind == TypeKind::kScalar) {  // trace-time condition
    if (*value != 0) {
      then_branch();
    } else if (else_branch) {
      else_branch();
    }
    return;
  }
  Branch branch(cond, loc);
  branch.then_begin();
  if (then_branch) then_branch();
  branch.then_end();
  branch.else_begin();
  if (else_branch) else_branch();
  branch.else_end();
  branch.finish();
}

}  // namespace tileops::tl
