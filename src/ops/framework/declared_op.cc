#include "tileops/ops/declared_op.h"

#include <atomic>
#include <bit>
#include <cmath>
#include <deque>
#include <limits>
#include <string>

#include "src/ops/framework/arg_check.h"
#include "src/ops/framework/broadcast.h"

namespace tileops::ops {
namespace {

// A default Tensor stands for an omitted optional argument.
bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }
// Whether an argument takes part in the checks: a required one always (a default Tensor there is
// refused as unusable, never read), an optional one when present.
bool takes_part(ArgKind kind, const Tensor& t) {
  return (kind != ArgKind::kOptionalInput && kind != ArgKind::kOptionalOutput) || present(t);
}

std::string value_expectation(ValueRule rule) {
  return rule == ValueRule::kFiniteNonNegative ? "a finite value >= 0" : "a finite float32 value";
}

// Integer and bool attributes hold what their C and C++ types can (hooks cast them), or the NaN
// of none_means(kFromCheck) where the declaration allows it.
void check_attribute_kinds(const ArgCheck& check, std::span<const ArgDecl> args,
                           std::span<const double> attributes) {
  std::size_t a = 0;
  for (const ArgDecl& arg : args) {
    if (is_tensor(arg.kind)) continue;
    const double v = attributes[a++];
    if (std::isnan(v) && arg.accepts_none && std::isnan(arg.none_value)) continue;
    const bool integral = v == std::trunc(v);
    switch (arg.kind) {
      case ArgKind::kInt:
        if (!integral || v < -2147483648.0 || v > 2147483647.0) {
          check.fail(ErrorKind::kInvalidArgument, arg.name, "an int32 value", std::to_string(v));
        }
        break;
      case ArgKind::kInt64:
        // INT64_MAX arrives as 2^63; hooks read it back saturated (int64_attribute).
        if (!integral || v < -9223372036854775808.0 || v > 9223372036854775808.0) {
          check.fail(ErrorKind::kInvalidArgument, arg.name, "an int64 value", std::to_string(v));
        }
        break;
      case ArgKind::kBool:
        if (v != 0.0 && v != 1.0) {
          check.fail(ErrorKind::kInvalidArgument, arg.name, "0 or 1", std::to_string(v));
        }
        break;
      default:
        break;
    }
  }
}

bool value_ok(ValueRule rule, double v) {
  switch (rule) {
    case ValueRule::kAny:
      return true;
    case ValueRule::kFiniteNonNegative:
      return v >= 0.0 && std::isfinite(v);
    case ValueRule::kFiniteFloat32:
      return std::fabs(v) <= std::numeric_limits<float>::max();
  }
  return true;
}

bool geometry_matches(const Problem& problem, std::span<const Tensor> tensors) {
  if (tensors.size() != problem.tensors.size()) return false;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!problem.tensors[i].matches(tensors[i])) return false;
  }
  return true;
}

// What call() remembers of an operator's last validated call on a thread.
struct CallMemo {
  bool valid = false;
  bool in_use = false;  // a call of this operator is running on this thread
  int implementation_index = 0;
  std::vector<TensorDesc> given;   // as the caller passed them: an omitted one is absent
  std::vector<double> attributes;  // as the caller passed them
  Problem problem;
};

bool memo_matches(const CallMemo& memo, std::span<const Tensor> given,
                  std::span<const double> attributes, int implementation_index) {
  if (!memo.valid || memo.implementation_index != implementation_index ||
      memo.given.size() != given.size() || memo.attributes.size() != attributes.size()) {
    return false;
  }
  for (std::size_t i = 0; i < given.size(); ++i) {
    if (memo.given[i].present != present(given[i]) || !memo.given[i].matches(given[i])) {
      return false;
    }
  }
  // Bitwise: a NaN attribute (none_means(kFromCheck)) repeats, -0.0 and 0.0 do not.
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    if (std::bit_cast<std::uint64_t>(memo.attributes[i]) !=
        std::bit_cast<std::uint64_t>(attributes[i])) {
      return false;
    }
  }
  return true;
}

std::atomic<int> memo_slots_used{0};

}  // namespace

std::size_t DeclaredOp::memo_slot() const {
  int slot = memo_slot_.load(std::memory_order_relaxed);
  if (slot < 0) {
    int fresh = memo_slots_used.fetch_add(1, std::memory_order_relaxed);
    // Another thread may have numbered this operator first: take its number.
    if (!memo_slot_.compare_exchange_strong(slot, fresh, std::memory_order_relaxed)) return slot;
    slot = fresh;
  }
  return static_cast<std::size_t>(slot);
}

std::span<const Tensor> DeclaredOp::resolved(std::span<const Tensor> given,
                                             std::vector<Tensor>& storage) const {
  if (!has_in_place_) return given;
  for (int i = 0; i < decl_.num_args; ++i) {
    const ArgDecl& a = decl_.args[i];
    if (a.kind != ArgKind::kOptionalOutput || a.in_place_of < 0 ||
        present(given[tensor_index(i)])) {
      continue;
    }
    if (storage.empty()) storage.assign(given.begin(), given.end());
    storage[tensor_index(i)] = given[tensor_index(a.in_place_of)];
  }
  return storage.empty() ? given : std::span<const Tensor>(storage);
}

std::string_view DeclaredOp::in_place_name_of(int arg, std::span<const Tensor> given) const {
  const ArgDecl& a = decl_.args[arg];
  const bool in_place = a.kind == ArgKind::kOptionalOutput && a.in_place_of >= 0 &&
                        !present(given[tensor_index(arg)]);
  return in_place ? decl_.args[a.in_place_of].name : a.name;
}

// As ArgCheck::outputs_do_not_overlap over the declared inputs and written arguments, in their
// order; omitted optional arguments take no part.
void DeclaredOp::check_memory(std::span<const Tensor> given,
                              std::span<const Tensor> tensors) const {
  const ArgCheck check(decl_.name);
  const auto args = decl_.arguments();
  const auto given_arg = [&](int arg) {
    return is_tensor(args[arg].kind) && takes_part(args[arg].kind, tensors[tensor_index(arg)]);
  };
  for (int o = 0; o < decl_.num_args; ++o) {
    if (!is_written(args[o].kind) || !given_arg(o)) continue;
    const ArgCheck::Named out{tensors[tensor_index(o)], name_of(o, given)};
    for (int i = 0; i < decl_.num_args; ++i) {
      if (given_arg(i) && !is_written(args[i].kind)) {
        check.output_apart_from_input(out, {tensors[tensor_index(i)], args[i].name},
                                      decl_.outputs_may_alias_inputs);
      }
    }
    for (int i = 0; i < o; ++i) {
      if (given_arg(i) && is_written(args[i].kind)) {
        check.outputs_apart(out, {tensors[tensor_index(i)], name_of(i, given)});
      }
    }
  }
}

void DeclaredOp::check_counts(std::size_t tensors, std::size_t attributes) const {
  if (tensors != num_tensors_ || attributes != num_attributes_) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string(decl_.name) + ": expected " + std::to_string(num_tensors_) +
                    " tensors and " + std::to_string(num_attributes_) + " attributes, got " +
                    std::to_string(tensors) + " and " + std::to_string(attributes));
  }
}

Problem DeclaredOp::problem(std::span<const Tensor> given,
                            std::span<const double> attributes) const {
  check_counts(given.size(), attributes.size());
  std::vector<Tensor> storage;
  return problem(given, resolved(given, storage), attributes);
}

Problem DeclaredOp::problem(std::span<const Tensor> given, std::span<const Tensor> tensors,
                            std::span<const double> attributes) const {
  const ArgCheck check(decl_.name);
  const auto args = decl_.arguments();
  check_attribute_kinds(check, args, attributes);
  const auto tensor_of = [&](int arg) -> const Tensor& { return tensors[tensor_index(arg)]; };
  // A rule relating an argument to an omitted one does not apply (the hook decides).
  const auto has = [&](int arg) { return arg >= 0 && takes_part(args[arg].kind, tensor_of(arg)); };
  for (int i = 0; i < decl_.num_args; ++i) {
    if (is_tensor(args[i].kind) && takes_part(args[i].kind, tensor_of(i)))
      check.usable(tensor_of(i), name_of(i, given));
  }
  for (int i = 0; i < decl_.num_args; ++i) {
    const ArgDecl& a = args[i];
    if (!is_tensor(a.kind) || !takes_part(a.kind, tensor_of(i))) continue;
    if (a.dtype.same_as >= 0) {
      if (!has(a.dtype.same_as)) continue;
      const DataType expected = tensor_of(a.dtype.same_as).dtype();
      if (tensor_of(i).dtype() != expected) {  // the message is built only on failure
        check.dtype_is(tensor_of(i), name_of(i, given), expected,
                       a.dtype.why.empty() ? "same as " + std::string(args[a.dtype.same_as].name)
                                           : std::string(a.dtype.why));
      }
    } else if (a.dtype.count == 1) {
      check.dtype_is(tensor_of(i), name_of(i, given), a.dtype.allowed[0]);
    } else if (a.dtype.count > 0) {
      check.dtype_in(tensor_of(i), name_of(i, given),
                     {a.dtype.allowed.data(), std::size_t(a.dtype.count)});
    }
  }
  for (int i = 0; i < decl_.num_args; ++i) {
    const ArgDecl& a = args[i];
    if (!is_tensor(a.kind) || !takes_part(a.kind, tensor_of(i))) continue;
    const Tensor& t = tensor_of(i);
    const std::string_view name = name_of(i, given);
    if (a.rank >= 0) check.rank_is(t, name, a.rank);
    if (a.min_rank > 0) check.rank_at_least(t, name, a.min_rank);
    if (a.shape.kind != ShapeKind::kAny &&
        (!has(a.shape.arg) || (a.shape.other >= 0 && !has(a.shape.other)))) {
      continue;
    }
    switch (a.shape.kind) {
      case ShapeKind::kAny:
        break;
      case ShapeKind::kSameAs:
        check.shape_is(t, name, tensor_of(a.shape.arg).shape(), a.shape_why);
        break;
      case ShapeKind::kLastDimOf:
        check.shape_is(t, name, Dims{tensor_of(a.shape.arg).size(-1)}, a.shape_why);
        break;
      case ShapeKind::kBroadcast:
        check_broadcast_operands(check, tensor_of(a.shape.arg), args[a.shape.arg].name,
                                 tensor_of(a.shape.other), args[a.shape.other].name, t, name);
        break;
    }
  }
  Problem p{decl_.name, {}, std::vector<double>(attributes.begin(), attributes.end())};
  p.attributes.resize(attributes.size() + std::size_t(decl_.derived_attributes), 0.0);
  if (hooks_.check != nullptr) hooks_.check(check, tensors, p.attributes);
  for (int i = 0; i < decl_.num_args; ++i) {
    if (is_written(args[i].kind) && takes_part(args[i].kind, tensor_of(i))) {
      check.writable(tensor_of(i), name_of(i, given));
    }
  }
  check_memory(given, tensors);
  int a = 0;
  for (const ArgDecl& arg : args) {
    if (is_tensor(arg.kind)) continue;
    const double v = attributes[a++];
    if (!value_ok(arg.value, v)) {
      check.fail(ErrorKind::kInvalidArgument, arg.name, value_expectation(arg.value),
                 std::to_string(v));
    }
  }
  if (has_folded_) {
    std::vector<double> kept;  // what the implementations read: all but the folded ones
    std::size_t i = 0;
    for (const ArgDecl& arg : args) {
      if (is_tensor(arg.kind)) continue;
      if (!arg.folded) kept.push_back(p.attributes[i]);
      ++i;
    }
    kept.insert(kept.end(), p.attributes.begin() + std::ptrdiff_t(i), p.attributes.end());
    p.attributes = std::move(kept);
  }
  p.tensors.reserve(tensors.size());
  for (int i = 0; i < decl_.num_args; ++i) {
    if (!is_tensor(args[i].kind)) continue;
    const Tensor& t = tensor_of(i);
    p.tensors.push_back(takes_part(args[i].kind, t) ? TensorDesc::of(t) : TensorDesc::absent());
  }
  return p;
}

void DeclaredOp::call(std::span<const Tensor> tensors, std::span<const double> attributes,
                      const Context& ctx) const {
  check_counts(tensors.size(), attributes.size());
  std::vector<Tensor> storage;
  const std::span<const Tensor> resolved_tensors = resolved(tensors, storage);
  if (hooks_.check != nullptr && !hooks_.check_reads_geometry_only) {
    run_problem(problem(tensors, resolved_tensors, attributes), resolved_tensors, ctx);
    return;
  }
  // A deque: an implementation may call another declared operator, whose slot may be new.
  thread_local std::deque<CallMemo> memos;
  const std::size_t slot = memo_slot();
  if (slot >= memos.size()) memos.resize(slot + 1);
  CallMemo& memo = memos[slot];
  if (memo.in_use) {  // an implementation calling its own operator: validate without the memo
    run_problem(problem(tensors, resolved_tensors, attributes), resolved_tensors, ctx);
    return;
  }
  struct InUse {
    bool& flag;
    explicit InUse(bool& f) : flag(f) { flag = true; }
    ~InUse() { flag = false; }
    InUse(const InUse&) = delete;
    InUse& operator=(const InUse&) = delete;
  } in_use(memo.in_use);
  if (memo_matches(memo, tensors, attributes, ctx.implementation_index)) {
    const ArgCheck check(decl_.name);
    for (int i = 0; i < decl_.num_args; ++i) {
      const ArgKind kind = decl_.args[i].kind;
      if (is_tensor(kind) && takes_part(kind, resolved_tensors[tensor_index(i)])) {
        check.usable(resolved_tensors[tensor_index(i)], name_of(i, tensors));
      }
    }
    check_memory(tensors, resolved_tensors);
    if (hooks_.check_data != nullptr) hooks_.check_data(check, resolved_tensors);
    run_problem(memo.problem, resolved_tensors, ctx);
    return;
  }
  memo.valid = false;
  memo.problem = problem(tensors, resolved_tensors, attributes);
  memo.implementation_index = ctx.implementation_index;
  memo.given.resize(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    memo.given[i] = present(tensors[i]) ? TensorDesc::of(tensors[i]) : TensorDesc::absent();
  }
  memo.attributes.assign(attributes.begin(), attributes.end());
  memo.valid = true;
  run_problem(memo.problem, resolved_tensors, ctx);
}

PreparedOperator DeclaredOp::prepare(std::span<const Tensor> tensors,
                                     std::span<const double> attributes,
                                     int implementation_index) const {
  std::vector<std::string_view> names;
  for (const ArgDecl& a : decl_.arguments()) {
    if (is_tensor(a.kind)) names.push_back(a.name);
  }
  return PreparedOperator(problem(tensors, attributes), std::move(names), implementation_index);
}

void DeclaredOp::run(const PreparedOperator& prepared, std::span<const Tensor> tensors,
                     const Context& ctx) const {
  check_counts(tensors.size(), num_attributes_);
  std::vector<Tensor> storage;
  const std::span<const Tensor> resolved_tensors = resolved(tensors, storage);
  check_memory(tensors, resolved_tensors);
  // Other geometry is refused by prepared.run, naming the argument, before any data is read.
  if (hooks_.check_data != nullptr && geometry_matches(prepared.problem(), resolved_tensors)) {
    hooks_.check_data(ArgCheck(decl_.name), resolved_tensors);
  }
  prepared.run(resolved_tensors, ctx);
}

void DeclaredOp::check_output_arg(int arg) const {
  if (arg < 0 || arg >= decl_.num_args || !is_written(decl_.args[arg].kind)) {
    throw Error(ErrorKind::kInvalidArgument, std::string(decl_.name) + ": argument " +
                                                 std::to_string(arg) + " is not an output");
  }
}

Dims DeclaredOp::output_shape(int arg, std::span<const Tensor> tensors,
                              std::span<const double> attributes) const {
  check_counts(tensors.size(), attributes.size());
  check_output_arg(arg);
  const ShapeRule& rule = decl_.args[arg].shape;
  const auto tensor_of = [&](int i) -> const Tensor& { return tensors[tensor_index(i)]; };
  switch (rule.kind) {
    case ShapeKind::kSameAs:
      return tensor_of(rule.arg).shape();
    case ShapeKind::kLastDimOf:
      return Dims{tensor_of(rule.arg).size(-1)};
    case ShapeKind::kBroadcast: {
      const Tensor& a = tensor_of(rule.arg);
      const Tensor& b = tensor_of(rule.other);
      const std::optional<Dims> shape = broadcast_shapes(a.shape(), b.shape());
      if (!shape) {
        throw_argument_error(ErrorKind::kInvalidArgument, decl_.name, decl_.args[rule.other].name,
                             "a shape broadcastable with " + a.shape().to_string(),
                             b.shape().to_string());
      }
      return *shape;
    }
    case ShapeKind::kAny:
      break;
  }
  if (hooks_.output_shape == nullptr) {
    throw Error(ErrorKind::kInternal, std::string(decl_.name) + ": no shape rule for output '" +
                                          std::string(decl_.args[arg].name) + "'");
  }
  return hooks_.output_shape(decl_.name, arg, tensors, attributes);
}

DataType DeclaredOp::output_dtype(int arg, std::span<const Tensor> tensors) const {
  check_counts(tensors.size(), num_attributes_);
  check_output_arg(arg);
  const DtypeRule& rule = decl_.args[arg].dtype;
  if (rule.same_as >= 0) return tensors[tensor_index(rule.same_as)].dtype();
  if (rule.count == 1) return rule.allowed[0];
  throw Error(ErrorKind::kInternal, std::string(decl_.name) + ": no dtype rule for output '" +
                                        std::string(decl_.args[arg].name) + "'");
}

const DeclaredOp& declared_op(std::string_view name) {
  for (const DeclaredOp* op : declared_ops()) {
    if (op->name() == name) return *op;
  }
  throw_argument_error(ErrorKind::kInvalidArgument, "declared_op", "name",
                       "the name of a declared operator", std::string(name));
}

}  // namespace tileops::ops
