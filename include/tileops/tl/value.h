// Trace-time handles. A kernel body runs once per specialisation; every tl function it calls
// appends an op to the IR of the kernel being traced (the tracer of the calling thread) and
// returns a Value naming the op's result. A Value is a scalar, a tile (static shape) or a global
// tensor; plain C++ numbers convert to "weak" constants that take the dtype of the tile they meet
// (Python-scalar semantics). Var is a mutable variable: reassigning it inside tl::range or
// tl::if_ makes a loop-carried / branch-result SSA value.
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tileops/core/data_type.h"
#include "tileops/tl/ir.h"

namespace tileops::tl {

// Where the user wrote a call: a default argument `Loc loc = Loc::current()` captures the
// caller's file and line, like std::source_location (which clang 14 cannot use with libstdc++ 12,
// so we spell it with the builtins both compilers provide).
struct Loc {
  const char* file = "";
  unsigned line = 0;
  const char* function = "";

  static constexpr Loc current(const char* file = __builtin_FILE(),
                               unsigned line = __builtin_LINE(),
                               const char* function = __builtin_FUNCTION()) {
    return Loc{file, line, function};
  }
  const char* file_name() const { return file; }
  unsigned line_number() const { return line; }
  const char* function_name() const { return function; }
};

template <typename T>
concept Number = std::is_arithmetic_v<T>;

class Value {
 public:
  Value() = default;
  // A weak constant (int64 or float32 until it meets a tile or scalar of another dtype).
  template <Number T>
  Value(T number, Loc loc = Loc::current())  // NOLINT(google-explicit-constructor)
      : id_(make_constant(static_cast<long double>(number), std::is_floating_point_v<T>,
                          std::is_same_v<T, bool>, loc)) {}

  // The value id inside the kernel being traced (-1 for a default-constructed Value).
  int id() const { return id_; }
  bool valid() const { return id_ >= 0; }
  const Type& type() const;
  DataType dtype() const { return type().dtype; }
  const std::vector<std::int64_t>& shape() const { return type().shape; }
  std::int64_t size() const { return type().size(); }
  bool is_tile() const { return type().kind == TypeKind::kTile; }
  bool is_scalar() const { return type().kind == TypeKind::kScalar; }

  // Cast (`.to(dtype, round_mode)`), transpose (`.T`) and a tensor's runtime extent.
  Value to(DataType dtype, RoundMode mode = RoundMode::kRint, Loc loc = Loc::current()) const;
  // The same bits read as `dtype`, of the same size (float32 <-> int32, float64 <-> int64,
  // float16 / bfloat16 <-> int16, int8 <-> uint8); not bool nor the 8-bit float formats.
  Value bitcast(DataType dtype, Loc loc = Loc::current()) const;
  Value T(Loc loc = Loc::current()) const;  // NOLINT(readability-identifier-naming)
  Value dim(int axis, Loc loc = Loc::current()) const;

  static Value from_id(int id) {
    Value v;
    v.id_ = id;
    return v;
  }

 protected:
  // long double: exact for every int64 (64-bit significand on x86-64, 113 bits on Arm).
  static int make_constant(long double number, bool is_float, bool is_bool, Loc loc);
  int id_ = -1;
};

// An operand of an operator or function: a Value or a number, plus where the user wrote it (C++
// operators cannot take a defaulted source_location; a converting constructor can).
struct Operand {
  Operand(const Value& v, Loc l = Loc::current())  // NOLINT(google-explicit-constructor)
      : value(v), loc(l) {}
  template <Number T>
  Operand(T number, Loc l = Loc::current())  // NOLINT(google-explicit-constructor)
      : value(number, l), loc(l) {}
  Value value;
  Loc loc;
};

// A mutable trace-time variable. Inside tl::range bodies and tl::if_ branches its reassignment
// becomes an SSA loop-carried value / branch result; its dtype and shape must then stay fixed.
class Var : public Value {
 public:
  Var(const Value& initial);  // NOLINT(google-explicit-constructor)
  template <Number T>
  Var(T number, Loc loc = Loc::current()) : Var(Value(number, loc)) {}  // NOLINT
  Var(const Var& other);
  ~Var();
  // Records a reassignment in the trace, unlike Value's plain copy: hiding it is the point.
  Var& operator=(const Value& value);  // NOLINT(bugprone-derived-method-shadowing-base-method)
  Var& operator=(const Var& other);
  template <Number T>
  Var& operator=(T number) {
    return *this = Value(number);
  }
  Var(Var&&) = delete;
  Var& operator=(Var&&) = delete;

  void rebind(int id) { id_ = id; }
};

// The parameters of a traced kernel: each is a Value bound to a function parameter.
struct GlobalAddress : Value {};  // pointer to global memory of one dtype
struct Int : Value {};            // runtime int64 scalar
struct Float : Value {};          // runtime float32 scalar
struct Bool : Value {};           // runtime bool scalar

// A compile-time parameter: an ordinary C++ value while tracing, part of the cache key.
template <typename T>
struct ConstExpr {
  T value;
  operator const T&() const { return value; }  // NOLINT(google-explicit-constructor)
  const T& operator*() const { return value; }
};

}  // namespace tileops::tl
