// The tracer: the IR under construction for one kernel specialisation. One tracer is active per
// thread while a kernel body runs (set by TraceScope), so concurrent traces of different kernels
// never share state. Builder functions find it with Tracer::current().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/tl/verify/infer.h"
#include "tileops/tl/value.h"

namespace tileops::tl {

SourceLoc to_loc(const Loc& loc);

class Tracer {
 public:
  explicit Tracer(std::string name);

  // The active tracer; throws naming `construct` when no kernel is being traced.
  static Tracer& current(const char* construct, const Loc& loc);
  static Tracer* active();

  Function& function() { return function_; }
  const Type& type_of(int id) const { return function_.type_of(id); }

  // Infers and checks the result types, then appends `op` to the innermost open region.
  std::vector<int> append(Op op);
  int append1(Op op) { return append(std::move(op)).at(0); }
  int new_value(Type type);  // a region or function argument

  // Constants: `weak` ones come from C++ numbers and adopt the dtype of what they meet.
  int constant(long double number, DataType dtype, bool weak, const SourceLoc& loc);
  std::optional<long double> constant_value(int id) const { return constants_.at(id); }
  bool is_weak(int id) const { return weak_.at(id); }

  // Regions of loops and branches under construction.
  void open_region(std::vector<int> args) { open_.push_back(Region{std::move(args), {}, {}}); }
  Region close_region();
  int depth() const { return static_cast<int>(open_.size()); }
  // Ops of the innermost open region; the last one removed (Branch::reopen_else).
  std::size_t region_size() const { return open_.back().ops.size(); }
  void pop_last_op() { open_.back().ops.pop_back(); }

  std::vector<Var*>& vars() { return vars_; }
  std::vector<int>& masks() { return masks_; }
  // A range body left without closing (break/return): reported at the next builder call.
  void set_broken(std::string message) { broken_ = std::move(message); }
  void check_not_broken() const;

  // Finishes the trace: every region closed; returns the function.
  Function finish();

 private:
  Function function_;
  std::vector<Region> open_;
  std::vector<std::optional<long double>> constants_;  // exact for int64 and double
  std::vector<bool> weak_;
  std::vector<Var*> vars_;
  std::vector<int> masks_;
  std::string broken_;
};

class TraceScope {
 public:
  explicit TraceScope(Tracer* tracer);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Tracer* previous_;
};

// Builder helpers shared by the op files.
Op make_op(OpKind kind, const Loc& loc);
// Promotes two operands to a common dtype (weak numbers adopt the other side's dtype; float beats
// int; wider wins; float16 with bfloat16 gives float32) and returns their ids after casts.
std::pair<int, int> promote(Tracer& t, const Operand& a, const Operand& b, const Loc& loc);
// Converts a value to `dtype` (constants are re-emitted, others cast with rint).
int coerce(Tracer& t, int id, DataType dtype, const Loc& loc);

// A Var is being destroyed: the loops and branches being traced that hold it let it go
// (control.cc). Python front-ends destroy Vars in any order.
void forget_var(const Var* var);
// A trace-time integer (an extent, a ConstExpr); throws naming `construct` otherwise.
std::int64_t static_int(Tracer& t, const Operand& v, const char* construct, const char* what);
std::vector<std::int64_t> static_shape(Tracer& t, const std::vector<Operand>& shape,
                                       const char* construct);
// An index operand as an int64 scalar.
int index_value(Tracer& t, const Operand& v, const char* construct);

}  // namespace tileops::tl
