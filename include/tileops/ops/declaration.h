// An operator's declaration: its arguments in order with their kind, dtypes, ranks and shape
// relations, defaults and names. It is plain constexpr data (src/ops/contracts/<op>.decl.h), so
// that one description drives the contract's validation (DeclaredOp) and the generator
// (tools/opgen) that writes the C API entry, the Python function and class, and the docs row.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string_view>

#include "tileops/core/data_type.h"

namespace tileops::ops {

enum class ArgKind : std::uint8_t {
  kInput,           // a tensor that is read
  kOptionalInput,   // a tensor or none (C: NULL; Python: None)
  kInOut,           // a tensor that is read and written (a cache)
  kOutput,          // a tensor that is written; Python allocates it when omitted
  kOptionalOutput,  // an output that may be omitted: then `in_place_of` is written in place,
                    // or, with in_place_of < 0 (requested_output), it is not computed at all
  kFloat,           // attributes: C double, Python float
  kInt,             // C int32_t, Python int
  kInt64,           // C int64_t, Python int
  kBool,            // C int32_t (nonzero = true), Python bool
};

constexpr bool is_tensor(ArgKind kind) { return kind <= ArgKind::kOptionalOutput; }
// Written by the operator: checked writable and apart from the other arguments.
constexpr bool is_written(ArgKind kind) {
  return kind == ArgKind::kInOut || kind == ArgKind::kOutput || kind == ArgKind::kOptionalOutput;
}

// Allowed dtypes, in the order an error lists them; or the dtype of another argument.
struct DtypeRule {
  std::array<DataType, kNumDataTypes> allowed{};  // room for any set of dtypes
  int count = 0;
  int same_as = -1;      // index of the argument whose dtype this one must have
  std::string_view why;  // the error's reason for same_as; empty: "same as <its name>"
};

constexpr DtypeRule dtype_in(std::initializer_list<DataType> dtypes) {
  DtypeRule rule;
  for (DataType d : dtypes) rule.allowed[rule.count++] = d;
  return rule;
}
constexpr DtypeRule kStandardFloat =
    dtype_in({DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16});
// The integers wrap modulo 2^n (as torch's do).
constexpr DtypeRule kArithmetic =
    dtype_in({DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
              DataType::kInt16, DataType::kInt32, DataType::kInt64, DataType::kUInt8});
constexpr DtypeRule kIndex = dtype_in({DataType::kInt32, DataType::kInt64});
constexpr DtypeRule dtype_of(int arg, std::string_view why = {}) {
  return DtypeRule{{}, 0, arg, why};
}

enum class ShapeKind : std::uint8_t {
  kAny,        // checked by the contract's own hook, if at all
  kSameAs,     // exactly the shape of argument `arg`
  kLastDimOf,  // [size(-1) of argument `arg`]
  kBroadcast,  // the NumPy broadcast of arguments `arg` and `other` (outputs only)
};

struct ShapeRule {
  ShapeKind kind = ShapeKind::kAny;
  int arg = -1;
  int other = -1;
};

constexpr ShapeRule same_shape_as(int arg) { return {ShapeKind::kSameAs, arg, -1}; }
constexpr ShapeRule last_dim_of(int arg) { return {ShapeKind::kLastDimOf, arg, -1}; }
constexpr ShapeRule broadcast_of(int a, int b) { return {ShapeKind::kBroadcast, a, b}; }

enum class ValueRule : std::uint8_t {
  kAny,
  kFiniteNonNegative,  // "a finite value >= 0"
  kFiniteFloat32,      // finite once rounded to float32: the math is float32
};

struct ArgDecl {
  std::string_view name;
  ArgKind kind = ArgKind::kInput;
  DtypeRule dtype{};
  int rank = -1;     // exact rank, -1 = any
  int min_rank = 0;  // rank at least
  ShapeRule shape{};
  std::string_view shape_why;  // said in the error when the shape relation fails
  ValueRule value = ValueRule::kAny;
  double default_value = 0.0;  // attributes, when has_default
  bool has_default = false;
  bool keyword_only = false;  // Python: after `*`
  bool accepts_none = false;  // Python: None is taken as `none_value`
  double none_value = 0.0;
  bool folded = false;    // read by hooks.check only: not in the Problem's attributes
  bool in_python = true;  // false: Python's signature leaves it out and passes the default
  int in_place_of = -1;   // kOptionalOutput: the argument written in place when it is omitted;
                          // -1: a requested output, computed only when given

  // Refinements that read like the contract: input("weight", kStandardFloat).rank_is(1).
  constexpr ArgDecl rank_is(int r) const {
    ArgDecl a = *this;
    a.rank = r;
    return a;
  }
  constexpr ArgDecl rank_at_least(int r) const {
    ArgDecl a = *this;
    a.min_rank = r;
    return a;
  }
  constexpr ArgDecl shape_is(ShapeRule rule, std::string_view why) const {
    ArgDecl a = *this;
    a.shape = rule, a.shape_why = why;
    return a;
  }
  constexpr ArgDecl values(ValueRule rule) const {
    ArgDecl a = *this;
    a.value = rule;
    return a;
  }
  constexpr ArgDecl defaults_to(double v) const {
    ArgDecl a = *this;
    a.default_value = v, a.has_default = true;
    return a;
  }
  constexpr ArgDecl keyword() const {
    ArgDecl a = *this;
    a.keyword_only = true;
    return a;
  }
  // Python's None (the default) stands for `v` (C callers pass `v` itself).
  constexpr ArgDecl none_means(double v) const {
    ArgDecl a = *this;
    a.accepts_none = true, a.none_value = v;
    return a;
  }
  // An attribute that hooks.check folds into the others (a second form of a window): validated
  // and seen by the hook, but left out of the attributes the implementations read.
  constexpr ArgDecl folded_by_check() const {
    ArgDecl a = *this;
    a.folded = true;
    return a;
  }
  // An attribute that the Python API lacks (C and C++ only): Python passes the default.
  constexpr ArgDecl not_in_python() const {
    ArgDecl a = *this;
    a.in_python = false;
    return a;
  }
};

constexpr ArgDecl argument(std::string_view name, ArgKind kind, DtypeRule dtype = {}) {
  ArgDecl a;
  a.name = name, a.kind = kind, a.dtype = dtype;
  return a;
}
constexpr ArgDecl input(std::string_view name, DtypeRule dtype = {}) {
  return argument(name, ArgKind::kInput, dtype);
}
constexpr ArgDecl optional_input(std::string_view name, DtypeRule dtype = {}) {
  return argument(name, ArgKind::kOptionalInput, dtype);
}
constexpr ArgDecl output(std::string_view name, DtypeRule dtype = {}) {
  return argument(name, ArgKind::kOutput, dtype);
}
constexpr ArgDecl in_out(std::string_view name, DtypeRule dtype = {}) {
  return argument(name, ArgKind::kInOut, dtype);
}
constexpr ArgDecl optional_output(std::string_view name, int in_place_of, DtypeRule dtype = {}) {
  ArgDecl a = argument(name, ArgKind::kOptionalOutput, dtype);
  a.in_place_of = in_place_of;
  return a;
}
// An output the caller asks for or not (a statistic beside the result): omitted (C: NULL, C++: an
// undefined Tensor), nothing is computed or allocated for it. Python takes the tensor or
// `return_<name>=True`, which allocates it (shape from hooks.output_shape), and then returns it
// after the other outputs.
constexpr ArgDecl requested_output(std::string_view name, DtypeRule dtype = {}) {
  return optional_output(name, -1, dtype);
}
constexpr bool is_requested_output(const ArgDecl& a) {
  return a.kind == ArgKind::kOptionalOutput && a.in_place_of < 0;
}
constexpr ArgDecl attribute(std::string_view name, ArgKind kind) { return argument(name, kind); }

inline constexpr int kMaxDeclaredArgs = 20;

// none_means(kFromCheck): Python's None leaves the value to hooks.check (from the shapes, say).
inline constexpr double kFromCheck = std::numeric_limits<double>::quiet_NaN();

struct OpDecl {
  std::string_view name;        // C: tileops_<name>; Python: tileops.ops.<name>
  std::string_view class_name;  // Python class form and C++ class
  std::string_view summary;     // one line, for the docstrings, the C header and the docs
  std::string_view detail;      // more for the C header and the docs (Python has its own words)
  std::array<ArgDecl, kMaxDeclaredArgs> args{};
  int num_args = 0;
  // Outputs may be the same view as an input (in-place use); otherwise no overlap at all.
  bool outputs_may_alias_inputs = true;
  // False where the C entry or the Python binding stays hand-written (an argument the
  // declaration cannot state: a tensor list, a torch.Generator, k as a number or a tensor).
  bool generate_c = true;
  bool generate_python = true;
  // False where the typed C++ function and class of include/tileops/ops/<op>.h take other
  // arguments than the declaration's (a struct of attributes, a second in-place form).
  bool generate_cpp = true;
  // False when the contract adds nothing to the declaration (no hooks): then the generated
  // table defines its DeclaredOp and the operator has no contract file.
  bool has_contract = true;
  // Attributes the contract's check hook computes, appended (zero) after the declared ones: what
  // implementations read but callers do not give (a rotated width derived from a table's shape).
  int derived_attributes = 0;

  constexpr std::span<const ArgDecl> arguments() const {
    return {args.data(), std::size_t(num_args)};
  }
};

constexpr OpDecl declare(std::string_view name, std::string_view class_name,
                         std::string_view summary, std::initializer_list<ArgDecl> args) {
  OpDecl d;
  d.name = name, d.class_name = class_name, d.summary = summary;
  for (const ArgDecl& a : args) d.args[d.num_args++] = a;
  return d;
}
// Refinements of a whole declaration: without_aliasing(declare(...)).
constexpr OpDecl without_aliasing(OpDecl d) { return d.outputs_may_alias_inputs = false, d; }
constexpr OpDecl hand_written_c(OpDecl d) { return d.generate_c = false, d; }
constexpr OpDecl hand_written_python(OpDecl d) { return d.generate_python = false, d; }
constexpr OpDecl hand_written_cpp(OpDecl d) { return d.generate_cpp = false, d; }
constexpr OpDecl declaration_only(OpDecl d) { return d.has_contract = false, d; }
constexpr OpDecl with_derived_attributes(int n, OpDecl d) { return d.derived_attributes = n, d; }
constexpr OpDecl with_detail(std::string_view detail, OpDecl d) { return d.detail = detail, d; }

// How implementations and hooks name what they read: an argument's index among the operator's
// tensors (Problem::tensors, the tensors a run gets) or among its attributes
// (Problem::attributes, folded ones left out). A name the declaration lacks, or of the other
// kind, does not compile: `tensors[tensor_index(decls::rms_norm, "weight")]`.
void no_tensor_argument_of_that_name();     // not constexpr: calling it stops compilation
void no_attribute_argument_of_that_name();  // not constexpr: calling it stops compilation
consteval int tensor_index(const OpDecl& op, std::string_view name) {
  int index = 0;
  for (const ArgDecl& a : op.arguments()) {
    if (!is_tensor(a.kind)) continue;
    if (a.name == name) return index;
    ++index;
  }
  no_tensor_argument_of_that_name();
  return -1;
}
consteval int attribute_index(const OpDecl& op, std::string_view name) {
  int index = 0;
  for (const ArgDecl& a : op.arguments()) {
    if (is_tensor(a.kind) || a.folded) continue;
    if (a.name == name) return index;
    ++index;
  }
  no_attribute_argument_of_that_name();
  return -1;
}
// The i-th attribute the check hook derives (OpDecl::derived_attributes), after the declared ones.
consteval int derived_attribute_index(const OpDecl& op, int i) {
  int declared = 0;
  for (const ArgDecl& a : op.arguments()) declared += !is_tensor(a.kind) && !a.folded;
  if (i < 0 || i >= op.derived_attributes) no_attribute_argument_of_that_name();
  return declared + i;
}

}  // namespace tileops::ops
