// Control flow inside a traced kernel.
//
//   for (tl::Value i : tl::range(0, n_tiles)) { ... }          // runtime loop (traced once)
//   for (int i : tl::static_range(4)) { ... }                  // unrolled while tracing
//   tl::if_(cond, [&] { ... }, [&] { ... });                   // runtime branch
//
// Every live tl::Var reassigned in a loop body becomes a loop-carried value; in a branch, a
// branch result. `break`, `return` or an exception out of a range body aborts the trace with an
// error (runtime loops have no early exit).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "tileops/tl/value.h"

namespace tileops::tl {

struct RangeOptions {
  int unroll_factor = 1;
  // A promise that iterations are independent; rejected when the body carries a value.
  bool parallel = false;
};

class Range {
 public:
  Range(const Operand& start, const Operand& stop, const Operand& step, RangeOptions options,
        Loc loc);
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

  struct Sentinel {};
  class Iterator {
   public:
    explicit Iterator(Range* range) : range_(range) {}
    Value operator*() const { return range_->induction_; }
    Iterator& operator++() {
      done_ = true;
      return *this;
    }
    // The body has run once (traced): close the loop's region.
    bool operator!=(Sentinel /*end*/) {
      if (!done_) return true;
      range_->close();
      return false;
    }

   private:
    Range* range_;
    bool done_ = false;
  };

  Iterator begin();
  Sentinel end() const { return {}; }

 private:
  void close();

  Value induction_;
  int bounds_[3] = {-1, -1, -1};  // start, stop, step value ids
  int unroll_ = 1;
  bool parallel_ = false;
  int depth_ = -1;  // tracer region depth of the body; -1 before begin()
  bool closed_ = false;
  Loc loc_;
};

Range range(const Operand& stop, Loc loc = Loc::current());
Range range(const Operand& start, const Operand& stop, const Operand& step = Operand(1),
            RangeOptions options = {}, Loc loc = Loc::current());

// 0, 1, ..., n - 1 as plain ints: the body is traced n times.
class StaticRange {
 public:
  explicit StaticRange(int n) : n_(n) {}
  struct Iterator {
    int i;
    int operator*() const { return i; }
    Iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i != other.i; }
  };
  Iterator begin() const { return {0}; }
  Iterator end() const { return {n_ > 0 ? n_ : 0}; }

 private:
  int n_;
};
inline StaticRange static_range(int n) { return StaticRange(n); }

// The two phases of a runtime branch, for front-ends whose branch bodies are not callables
// (Python's `with tl.if_(c):` / `with tl.else_():`). Call then_begin/then_end, optionally
// else_begin/else_end, then finish() (which appends the `if` op and rebinds the Vars the
// branches changed). reopen_else() takes a finished branch back to add an else branch; it is an
// error unless the `if` is still the last op traced. Unlike if_, a trace-time constant condition
// still makes an `if` op (both bodies are traced).
class Branch {
 public:
  Branch(const Operand& cond, Loc loc = Loc::current());
  ~Branch();
  Branch(const Branch&) = delete;
  Branch& operator=(const Branch&) = delete;
  void then_begin();
  void then_end();
  void else_begin();
  void else_end();
  void finish();
  void reopen_else(Loc loc = Loc::current());
  // Makes `var`, which had no value before the branch (a name first assigned inside it), a
  // candidate result: it becomes one if both branches set it; otherwise finish() leaves it
  // unset (invalid). Call it inside a branch, before that branch's *_end().
  void adopt(Var& var);
  // A Var destroyed while the branch is open (Python drops Vars in any order): it is left out.
  void forget(const Var* var);

 private:
  void begin();
  Region end();

  int cond_ = -1;
  Loc loc_;
  std::vector<std::pair<Var*, int>> before_;  // live Vars and their ids on entry
  std::vector<int> then_ids_, else_ids_;      // their ids at the end of each branch
  Region then_, else_;
  int depth_ = 0;
  std::size_t position_ = 0;  // of the appended op in the enclosing region
  bool finished_ = false;
  bool has_else_ = false;
  bool then_done_ = false;
};

// A runtime branch on a bool (or integer, meaning != 0) scalar; when `cond` is a trace-time
// constant only the chosen branch is traced.
// NOLINTNEXTLINE(readability-identifier-naming): `if` is a keyword
void if_(const Operand& cond, const std::function<void()>& then_branch,
         const std::function<void()>& else_branch = {}, Loc loc = Loc::current());

}  // namespace tileops::tl
