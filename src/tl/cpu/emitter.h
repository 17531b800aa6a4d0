// The code generator's state, shared by its files: one Emitter walks a Function and appends C++
// to `out`. Values are named v<id>; tiles are arrays (or pointers aliasing one), scalars locals.
// Float tiles of 16-bit and 8-bit dtypes hold float values already rounded to their dtype.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/tl/cpu/codegen.h"
#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {

// Concatenation without a temporary per `+` (for code built in loops).
inline std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}

// The C type a value of `dtype` computes in, and the one its global memory holds.
const char* compute_type(DataType dtype);
const char* memory_type(DataType dtype);
// The bytes of one element of compute_type(dtype).
std::int64_t compute_bytes(DataType dtype);
// C expression rounding a float-typed (float, or double for float64) expression to `dtype`, and
// one rounding a double-typed expression.
std::string round_float(DataType dtype, const std::string& x);
std::string round_double(DataType dtype, const std::string& x);
// C expression wrapping an i64-typed expression to an integer or bool dtype.
std::string wrap_int(DataType dtype, const std::string& x);

// Row-major strides of `shape`, and the strides of `shape` read as if broadcast to `out` (0 on
// broadcast dims, aligned right) (codegen_compute.cc).
using Strides = std::vector<std::int64_t>;
Strides row_major(const std::vector<std::int64_t>& shape);
Strides broadcast_strides(const std::vector<std::int64_t>& shape,
                          const std::vector<std::int64_t>& out);

class Emitter {
 public:
  // `hint_work`: for each tl::prefetch op, the lanes of the loops that advance its cursor, as a
  // previous run measured them (hint_work()); without it each loop covers the whole hint.
  explicit Emitter(const Function& f, std::map<const Op*, std::int64_t> hint_work = {})
      : f_(f), planned_work_(std::move(hint_work)) {}
  GeneratedSource run();
  const std::map<const Op*, std::int64_t>& hint_work() const { return hint_work_; }

  // codegen.cc: control flow and memory.
  void region(const Region& r);
  void op(const Op& o);
  void for_op(const Op& o);
  void if_op(const Op& o);
  void tensor_op(const Op& o);
  void load_op(const Op& o);
  // For a load about to be emitted: the tensors stored to while its tile is live (which must not
  // overlap the loaded tensor for the tile to be read in place), or nullopt when the loaded
  // tensor itself is stored to then, unless as an in-place update: by the last op using the
  // tile, at the load's offsets, a tile of its shape computed elementwise (reductions of it
  // complete first), which writes each element only after its last read.
  std::optional<std::vector<int>> direct_load_hazards(const Op& load) const;
  // Whether ops (load, last] of `r` update the loaded tile's memory in place as above (`live`:
  // the values derived from the tile).
  bool updated_in_place(const Region& r, std::size_t load, std::size_t last,
                        const std::vector<bool>& live) const;
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
  // `total` lanes per step: by its share of the hinted tile (1 to 4 lines), so that the fetch
  // is spread over all the loops that follow the hint (planned_work_), or this one alone.
  std::string advance_hints(std::int64_t lanes, std::int64_t total);

  // codegen_compute.cc: computation; codegen_layout.cc: moves and matmul.
  void elementwise_op(const Op& o);
  void cast_op(const Op& o);
  void reduce_op(const Op& o);
  void cumsum_op(const Op& o);
  void move_op(const Op& o);  // reshape, broadcast, transpose, slice, concat
  void matmul_op(const Op& o);
  // Loops over `shape` (row-major; the counter `tl_k` numbers the elements) and calls `body`
  // with, for each entry of `strides`, the element index expression of a strided operand.
  void strided_loops(const std::vector<std::int64_t>& shape,
                     const std::vector<std::vector<std::int64_t>>& strides,
                     const std::vector<std::int64_t>& bases,
                     const std::function<void(const std::vector<std::string>&)>& body);

  // A loop-carried tile used only by `o` (which may then overwrite it in place).
  bool consumable(int id) const { return plan(id).carried && plan(id).uses == 1; }

  // A float32 tile whose only use is as the left operand of a matmul: matmul_acc takes its row
  // stride, so a load may read it in place from a tensor whose rows are not adjacent.
  bool matmul_lhs_only(int id) const {
    const Op* u = plan(id).last_user;
    return plan(id).uses == 1 && u != nullptr && u->kind == OpKind::kMatmul &&
           u->operands[0] == id && type(id).dtype == DataType::kFloat32 &&
           type(id).shape.size() == 2;
  }

  // The index of operand `id` in a flat loop over `result` whose counter is `index`: `index`
  // when it has the result's elements in the same order (or is a scalar), "0" for a one-element
  // tile, nullptr when it needs strided indexing.
  const char* flat_index(int id, const Type& result, const char* index) const;
  // The planned run length of reduction `o` (plan.h).
  std::int64_t suffix_run(const Op& o) const { return cpu::suffix_run(f_, o); }
  // In the body of a 64-lane loop (lane q of element base + q), replaces the reads of widened
  // 16-bit tiles at that element (at(): tl_bf2f(<v>[base + q]), tl_h2f(...)) by reads of float32
  // blocks, and returns the statements that fill those blocks (tl_widen64) before the lane loop.
  std::string widen_blocks(std::string& body, const std::string& base) const;
  // Whether every element of `id` is >= 0 or NaN by construction (exp, exp2): its sums may
  // add blocks in float32 with a bounded relative error (codegen_reduce.cc).
  bool nonnegative(int id) const;
  // A float32 row sum (or mean) of the elementwise result `id` in the region being emitted, which
  // the loop producing `id` can compute on the way (nullptr if none).
  const Op* sum_of(int id) const;
  // Emits reduction `r` (suffix_run) into out[o]; value(i) is the expression of element i, also
  // stored to sink[i] when sink is not empty (the producer's loop).
  using ElementFn = std::function<std::string(const std::string&)>;
  void sum_runs(const Op& r, const ElementFn& value, const std::string& sink,
                const std::string& out);
  // The store of float32 tile `id` that the loop producing it (which also sums it, sum_of) may
  // write straight to memory: the tile's only other use, later in the current region, unmasked,
  // its tensor and offsets known before `producer`, and no op between them reading or writing
  // memory. Loads whose tiles feed `id` already read in place only when they do not overlap the
  // stored tensor (direct_load_hazards), so writing earlier clobbers nothing they read.
  const Op* sinkable_store(const Op& producer, int id) const;
  // The name under which reduction `o`'s result is indexed ("(&v)" for a scalar), declared.
  std::string declare_reduced(const Op& o);

  // Helpers.
  const Type& type(int id) const { return f_.type_of(id); }
  const ValuePlan& plan(int id) const { return plan_[static_cast<std::size_t>(id)]; }
  static std::string name(int id) { return std::string("v").append(std::to_string(id)); }
  // Element `index` of value `id` (a scalar ignores the index).
  std::string at(int id, const std::string& index) const;
  // Declares the result of `o` (array or scalar local, uninitialised).
  void declare(int id) { declare_named(name(id), type(id)); }
  void declare_named(const std::string& n, const Type& t);
  // Counts an array of `bytes` the kernel declares on the stack (check_stack's total), made for
  // the op being emitted.
  void on_stack(std::int64_t bytes);
  // Fails, naming the op of the largest array, when the arrays exceed kStackBudget.
  void check_stack() const;
  // Sets every element of the declared tile dst (of type t) to the scalar expression value.
  void fill(const std::string& dst, const Type& t, const std::string& value);
  // A `full` tile used only as a loop's initial value: for_op fills the loop's own tile with it.
  bool fills_carried(int id) const;
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
  // Fusion: an elementwise result whose single use is another elementwise op of the same region
  // is not stored; its expression (index placeholder kIndex) is substituted at the use. A `cheap`
  // expression (a conversion) is also fused when its uses are several operands of one op (x * x),
  // and a `widening` one (a 16-bit float read as float) into several elementwise ops.
  // Several uses are fused as well when they all end up in one expression (the plan's
  // fusion_root): the polynomial of a hand-written exp uses its argument four times; the C++
  // compiler evaluates the repeated subexpression once.
  bool defer(int id, const std::string& expression, bool cheap = false, bool widening = false);
  static constexpr const char* kIndex = "@K@";

  const Function& f_;
  std::vector<ValuePlan> plan_;  // plan_values(f_), made before anything is printed
  std::vector<bool> summed_;     // reductions already computed in their operand's loop
  // Tiles whose producing loop wrote them to their store's memory when <v>_sunk holds at run
  // time (sinkable_store): the store then runs only otherwise.
  std::vector<bool> sunk_;
  const Region* current_ = nullptr;    // the region being emitted
  std::vector<std::string> deferred_;  // fused expressions ("" when stored)
  std::vector<bool> emitted_;          // tensors whose C++ locals exist (tensor_op has run)
  // 16-bit float tiles kept in their memory type (u16, in place or copied): at() widens each
  // element where it is read, so the conversion is fused into the consumer's loop.
  std::vector<bool> widened_;
  // The row stride (a C expression) of matmul left operands loaded by matmul_lhs_only loads;
  // empty for a tile laid out densely (row stride = its width).
  std::vector<std::string> row_stride_;
  std::ostringstream out_;
  // Software prefetch of the next loop iteration's tiles: for each tile read in place inside a
  // loop, a cursor (<v>_pf, up to <v>_pf_end) over the bytes the next iteration will read, the
  // address extrapolated from this iteration's and the previous one's (held in <v>_prev,
  // declared at the kernel's top: hoisted_, inserted at hoist_at_). The 64-lane store loops
  // advance the cursors in scope (prefetch_: each entry is its advance statement) by the tile's
  // share of lines per 64 lanes, so the next tile arrives while this one is computed and written.
  std::vector<std::string> prefetch_;
  // tl::prefetch cursors (<h>, up to <h>_end) in scope: the vector loops of reductions and
  // stores advance them by their share of the hinted tile per step (advance_hints), spreading
  // its fetch over the work that follows the hint.
  std::vector<std::string> hints_;
  std::vector<std::int64_t> hint_bytes_;  // the hinted tile of each entry of hints_
  std::vector<const Op*> hint_ops_;       // the prefetch op of each entry of hints_
  // Lanes of the loops that advance each hint: measured by this run (a store that runs only
  // when its tile was not sunk does not count: it seldom runs), and planned by a previous one.
  std::map<const Op*, std::int64_t> hint_work_, planned_work_;
  bool count_work_ = true;
  // The tensors in scope (their <t>_bytes sum to the working set that decides streaming).
  std::vector<std::string> tensors_;
  std::vector<std::string> hoisted_;
  std::size_t hoist_at_ = 0;
  int loop_depth_ = 0;
  const Op* emitting_ = nullptr;  // the op whose code is being emitted (innermost)
  std::int64_t stack_bytes_ = 0, largest_bytes_ = 0;
  const Op* largest_op_ = nullptr;
  std::string indent_ = "  ";
  int counter_ = 0;
  std::vector<RuntimeCheck> checks_;
};

}  // namespace tileops::tl::cpu
