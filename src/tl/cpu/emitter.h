// The code generator's printer, shared by its files: one Emitter walks a Function and appends
// C++ to `out` as its plan (plan.h, made first by plan_kernel) says; it takes no decision of its
// own. Values are named v<id>; tiles are arrays (or pointers aliasing one), scalars locals.
// Float tiles of 16-bit and 8-bit dtypes hold float values already rounded to their dtype.
#pragma once

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/tl/cpu/codegen.h"
#include "src/tl/cpu/codegen_types.h"
#include "src/tl/cpu/elements.h"
#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {

// Row-major strides of `shape`, and the strides of `shape` read as if broadcast to `out` (0 on
// broadcast dims, aligned right) (codegen_compute.cc).
using Strides = std::vector<std::int64_t>;
Strides row_major(const std::vector<std::int64_t>& shape);
Strides broadcast_strides(const std::vector<std::int64_t>& shape,
                          const std::vector<std::int64_t>& out);

class Emitter {
 public:
  explicit Emitter(const Function& f) : f_(f), plan_(plan_kernel(f)), elements_(f, plan_.values) {}
  GeneratedSource run();

  // codegen.cc: control flow and memory.
  void region(const Region& r);
  void op(const Op& o);
  void for_op(const Op& o);
  void if_op(const Op& o);
  void tensor_op(const Op& o);
  void load_op(const Op& o);
  void store_op(const Op& o);
  void prefetch_op(const Op& o);
  // For a tile of `shape` at `offsets` (C expressions) in tensor `t`: the condition that it lies
  // in the tensor in row-major order (rows at any stride when `any_row_stride`), and the element
  // offset of its first element.
  std::pair<std::string, std::string> contiguous_tile(const std::string& t,
                                                      const std::vector<std::int64_t>& shape,
                                                      const std::vector<std::string>& offsets,
                                                      bool any_row_stride) const;
  // Code that advances every prefetch hint in scope (hints_) in a loop that takes `lanes` of
  // `total` lanes per step: by its share of the hinted tile (hint_lines), spread over all the
  // loops that follow the hint (the plan's hint_work), or over this one alone.
  std::string advance_hints(std::int64_t lanes, std::int64_t total) const;

  // codegen_compute.cc: computation; codegen_layout.cc: moves and matmul.
  void elementwise_op(const Op& o);
  void cast_op(const Op& o);
  void reduce_op(const Op& o);
  void cumsum_op(const Op& o);
  void sort_op(const Op& o);  // sort, argsort, top-k
  void move_op(const Op& o);  // reshape, broadcast, transpose, slice, concat
  void matmul_op(const Op& o);
  // Loops over `shape` (row-major; the counter `tl_k` numbers the elements) and calls `body`
  // with, for each entry of `strides`, the element index expression of a strided operand.
  void strided_loops(const std::vector<std::int64_t>& shape,
                     const std::vector<std::vector<std::int64_t>>& strides,
                     const std::vector<std::int64_t>& bases,
                     const std::function<void(const std::vector<std::string>&)>& body);

  // dst[k] = element(k) for k < n, a flat loop over a tile of `dtype`; values that end rounded
  // to bfloat16 are rounded 64 at a time (tl_round_bf16_64).
  void flat_loop(const std::string& dst, std::int64_t n, DataType dtype,
                 const std::function<std::string(const std::string&)>& element);
  // The planned run length of reduction `o` (plan.h).
  std::int64_t suffix_run(const Op& o) const { return cpu::suffix_run(f_, o); }
  // Emits reduction `r` (suffix_run) into out[o]; value(i, lanes) is the expression of element
  // i, also stored to sink[i] when sink is not empty (the producer's loop); its 64-lane loop
  // reads the widened tiles `blocks` as float32 blocks (plan.h's lane_blocks).
  using ElementFn = std::function<std::string(const std::string&, const LaneBlocks*)>;
  void sum_runs(const Op& r, const ElementFn& value, const std::vector<int>& blocks,
                const std::string& sink, const std::string& out);
  // The name under which reduction `o`'s result is indexed ("(&v)" for a scalar), declared.
  std::string declare_reduced(const Op& o);

  // Helpers.
  const Type& type(int id) const { return f_.type_of(id); }
  const ValuePlan& plan(int id) const { return plan_.at(id); }
  static std::string name(int id) { return value_name(id); }
  // Element `index` of value `id` (a scalar ignores the index; elements.h).
  std::string at(int id, const std::string& index) const { return elements_.at(id, index); }
  // Declares the result of `o` (array or scalar local, uninitialised; a tile held as bfloat16
  // bits in its memory type, plan.h).
  void declare(int id) { declare_named(name(id), type(id), plan(id).bits); }
  void declare_named(const std::string& n, const Type& t, bool bits = false);
  // Counts an array of `bytes` the kernel declares on the stack (check_stack's total), made for
  // the op being emitted.
  void on_stack(std::int64_t bytes);
  // Fails, naming the op of the largest array, when the arrays exceed kStackBudget.
  void check_stack() const;
  // Sets every element of the declared tile dst (of type t) to the scalar expression value.
  void fill(const std::string& dst, const Type& t, const std::string& value);
  // dst and src are declared values of one type.
  void copy_value(int dst, int src) { copy_named(name(dst), name(src), type(dst)); }
  void copy_named(const std::string& dst, const std::string& src, const Type& t);
  // Loops over the rows (all dims but the last) of a tile of `shape` at `offsets` in tensor `t`;
  // defines tl_row, tl_in, tl_base, tl_lo, tl_hi (see codegen_memory.cc). Returns the loops
  // opened (close each).
  int open_rows(const std::string& t, const std::vector<std::int64_t>& shape,
                const std::vector<std::string>& offsets);
  std::string fresh(const char* prefix) {
    return std::string(prefix).append(std::to_string(counter_++));
  }
  // The status a failed check at `o` returns.
  int error_site(const Op& o, std::string what, std::string message) {
    checks_.push_back({o.loc, std::move(what), std::move(message)});
    return static_cast<int>(checks_.size());
  }
  std::ostream& line() { return out_ << indent_; }
  void open(const std::string& head) {
    line() << head << " {\n";
    indent_ += "  ";
  }
  void close() {
    indent_.resize(indent_.size() - 2);
    line() << "}\n";
  }

 private:
  const Function& f_;
  const KernelPlan plan_;  // plan_kernel(f_), made before anything is printed
  const Elements elements_;
  // Printing the store that runs only when its tile was not sunk (`if (!<v>_sunk)`).
  bool printing_unsunk_ = false;
  std::ostringstream out_;
  // Software prefetch of the next loop iteration's tiles: for each tile read in place inside a
  // loop with a cursor (plan: next_tile_cursor; <v>_pf, up to <v>_pf_end) over the bytes the
  // next iteration will read, the address extrapolated from this iteration's and the previous
  // one's (held in <v>_prev, declared at the kernel's top: hoisted_, inserted at hoist_at_). The
  // 64-lane store loops advance the cursors in scope (prefetch_: each entry is its advance
  // statement) by the tile's share of lines per 64 lanes, so the next tile arrives while this
  // one is computed and written.
  std::vector<std::string> prefetch_;
  // tl::prefetch cursors (<h>, up to <h>_end) in scope: the vector loops of reductions and
  // stores advance them by their share of the hinted tile per step (advance_hints).
  std::vector<std::string> hints_;
  std::vector<std::int64_t> hint_bytes_;  // the hinted tile of each entry of hints_
  std::vector<const Op*> hint_ops_;       // the prefetch op of each entry of hints_
  // The tensors in scope (their <t>_bytes sum to the working set that decides streaming).
  std::vector<std::string> tensors_;
  std::vector<std::string> hoisted_;
  std::size_t hoist_at_ = 0;
  const Op* emitting_ = nullptr;  // the op whose code is being emitted (innermost)
  std::int64_t stack_bytes_ = 0, largest_bytes_ = 0;
  const Op* largest_op_ = nullptr;
  std::string indent_ = "  ";
  int counter_ = 0;
  std::vector<RuntimeCheck> checks_;
};

}  // namespace tileops::tl::cpu
