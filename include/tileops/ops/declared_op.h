// DeclaredOp: an operator reached through its declaration, with its arguments as two lists in
// declaration order: the tensors (an omitted optional one is a default Tensor) and the
// attributes (as doubles; bools are 0/1). The C API, the Python bindings and the demo call
// operators this way; the typed functions of include/tileops/ops/<op>.h are the same calls.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "tileops/core/tensor.h"
#include "tileops/ops/declaration.h"
#include "tileops/ops/problem.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

class ArgCheck;

// What an operator adds to its declaration, in its contract (src/ops/contracts/<op>.cc).
struct ContractHooks {
  // Runs after the declared dtype, rank and shape rules: the checks a declaration cannot
  // state. May rewrite attributes into the form the implementations read (a normalised dim).
  void (*check)(const ArgCheck& check, std::span<const Tensor> tensors,
                std::span<double> attributes) = nullptr;
  // The shape of output `arg` (a declaration index) for an output declared with ShapeKind::kAny,
  // from the inputs (outputs are undefined Tensors); throws naming the input that cannot give
  // one.
  Dims (*output_shape)(std::string_view op, int arg, std::span<const Tensor> tensors,
                       std::span<const double> attributes) = nullptr;
  // Checks of data that a prepared operator repeats on every run (index values: lengths, block
  // ids), once the tensors have the prepared geometry; `check` runs them for the first call.
  void (*check_data)(const ArgCheck& check, std::span<const Tensor> tensors) = nullptr;
  // True when `check` reads only geometry (dtypes, shapes, strides, presence) and attributes,
  // never data pointers or values. Operators without a `check`, or with this set, skip their
  // declared checks when a call repeats the geometry its thread validated last (see call()).
  bool check_reads_geometry_only = false;
};

class DeclaredOp {
 public:
  constexpr DeclaredOp(const OpDecl& decl, ContractHooks hooks = {}) : decl_(decl), hooks_(hooks) {
    for (int i = 0; i < decl.num_args; ++i) {
      const ArgDecl& a = decl.args[i];
      tensor_index_[i] = is_tensor(a.kind) ? num_tensors_++ : -1;
      num_attributes_ += is_tensor(a.kind) ? 0 : 1;
      has_in_place_ = has_in_place_ || (a.kind == ArgKind::kOptionalOutput && a.in_place_of >= 0);
      has_folded_ = has_folded_ || a.folded;
    }
  }

  const OpDecl& decl() const { return decl_; }
  std::string_view name() const { return decl_.name; }

  // Validates every argument (the first bad one is named) and returns the Problem.
  Problem problem(std::span<const Tensor> tensors, std::span<const double> attributes) const;
  // problem() and a run. A call that repeats, on its thread, the geometry, attributes and
  // implementation index of this operator's last validated call runs only the checks that read
  // addresses or data (usable, memory overlap, check_data): the rest cannot fail again.
  void call(std::span<const Tensor> tensors, std::span<const double> attributes,
            const Context& ctx) const;
  // The class form: validated and specialised once, then run on data of that geometry.
  PreparedOperator prepare(std::span<const Tensor> tensors, std::span<const double> attributes,
                           int implementation_index) const;
  void run(const PreparedOperator& prepared, std::span<const Tensor> tensors,
           const Context& ctx) const;

  // The same with the lists written out: op.call({input, weight, out}, {eps}, ctx).
  void call(std::initializer_list<Tensor> tensors, std::initializer_list<double> attributes,
            const Context& ctx) const {
    call(span_of(tensors), span_of(attributes), ctx);
  }
  PreparedOperator prepare(std::initializer_list<Tensor> tensors,
                           std::initializer_list<double> attributes,
                           int implementation_index) const {
    return prepare(span_of(tensors), span_of(attributes), implementation_index);
  }
  void run(const PreparedOperator& prepared, std::initializer_list<Tensor> tensors,
           const Context& ctx) const {
    run(prepared, span_of(tensors), ctx);
  }

  // What an omitted output (a declaration index) is allocated as. Inputs must be given.
  Dims output_shape(int arg, std::span<const Tensor> tensors,
                    std::span<const double> attributes) const;
  DataType output_dtype(int arg, std::span<const Tensor> tensors) const;

  // Index into the tensor list of declaration argument `arg` (-1 for an attribute).
  int tensor_index(int arg) const { return tensor_index_[arg]; }

 private:
  template <typename T>
  static std::span<const T> span_of(std::initializer_list<T> list) {
    return {list.begin(), list.size()};
  }
  // `given` as the caller passed them, `tensors` as resolved() made them.
  Problem problem(std::span<const Tensor> given, std::span<const Tensor> tensors,
                  std::span<const double> attributes) const;
  void check_memory(std::span<const Tensor> given, std::span<const Tensor> tensors) const;
  // The lists' lengths are the declaration's (kInvalidArgument otherwise): the lists come from
  // generated code, but DeclaredOp is public.
  void check_counts(std::size_t tensors, std::size_t attributes) const;
  void check_output_arg(int arg) const;
  // The tensors with each omitted in-place output (kOptionalOutput) replaced by the argument it
  // writes in place, as implementations see them: `given` itself when none is omitted, else a
  // copy kept in `storage`.
  std::span<const Tensor> resolved(std::span<const Tensor> given,
                                   std::vector<Tensor>& storage) const;
  // Argument `arg`'s name in errors: an omitted in-place output is named as what it writes.
  std::string_view name_of(int arg, std::span<const Tensor> given) const {
    return has_in_place_ ? in_place_name_of(arg, given) : decl_.args[arg].name;
  }
  std::string_view in_place_name_of(int arg, std::span<const Tensor> given) const;
  // This operator's slot in the per-thread memo of call(), numbered on first use.
  std::size_t memo_slot() const;

  const OpDecl& decl_;
  ContractHooks hooks_;
  std::array<int, kMaxDeclaredArgs> tensor_index_{};
  std::size_t num_tensors_ = 0;
  std::size_t num_attributes_ = 0;
  // Per call, only these declarations pay for omitted in-place outputs and folded attributes.
  bool has_in_place_ = false;
  bool has_folded_ = false;
  mutable std::atomic<int> memo_slot_{-1};
};

// A kInt64 attribute as a hook reads it, saturated: INT64_MAX arrives as 2^63, which int64
// cannot hold; a NaN (none_means(kFromCheck) left unresolved) reads as INT64_MIN.
inline std::int64_t int64_attribute(double v) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (v >= kTwoTo63) return std::numeric_limits<std::int64_t>::max();
  if (!(v > -kTwoTo63)) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

// The declared operator named `name`; throws kInvalidArgument for an unknown name.
const DeclaredOp& declared_op(std::string_view name);
// Every declared operator, by name.
std::span<const DeclaredOp* const> declared_ops();

}  // namespace tileops::ops
