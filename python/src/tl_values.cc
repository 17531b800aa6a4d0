// tl.Value (operators in both operand orders with Python numbers, properties, casts), tl.Var
// (the mutable variable that becomes loop-carried / branch results), tl.DataType, tl.RoundMode.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "python/src/errors.h"
#include "python/src/tl_bindings.h"
#include "tileops/core/error.h"

namespace tileops::python {
namespace {

using tl::BinaryOp;
using tl::UnaryOp;

tl::Value binary(BinaryOp op, py::handle a, py::handle b) {
  const tl::Loc loc = caller_loc();
  return tl::binary(op, to_operand(a, loc, tl::name_of(op), "lhs"),
                    to_operand(b, loc, tl::name_of(op), "rhs"), loc);
}

tl::Value unary(UnaryOp op, py::handle x) {
  const tl::Loc loc = caller_loc();
  return tl::unary(op, to_operand(x, loc, tl::name_of(op), "x"), loc);
}

// Python operators: (name, reflected name, op). Reflected forms swap the operands.
struct BinaryDunder {
  const char* name;
  const char* reflected;
  BinaryOp op;
};
constexpr BinaryDunder kBinaryDunders[] = {
    {"__add__", "__radd__", BinaryOp::kAdd},
    {"__sub__", "__rsub__", BinaryOp::kSub},
    {"__mul__", "__rmul__", BinaryOp::kMul},
    {"__truediv__", "__rtruediv__", BinaryOp::kDiv},
    {"__floordiv__", "__rfloordiv__", BinaryOp::kFloorDiv},
    {"__mod__", "__rmod__", BinaryOp::kMod},
    {"__pow__", "__rpow__", BinaryOp::kPow},
    {"__and__", "__rand__", BinaryOp::kBitAnd},
    {"__or__", "__ror__", BinaryOp::kBitOr},
    {"__xor__", "__rxor__", BinaryOp::kBitXor},
    {"__lshift__", "__rlshift__", BinaryOp::kShl},
    {"__rshift__", "__rrshift__", BinaryOp::kShr},
};
// Comparisons: Python reflects them itself (3 < v calls v.__gt__(3)).
constexpr BinaryDunder kComparisons[] = {
    {"__eq__", nullptr, BinaryOp::kEq}, {"__ne__", nullptr, BinaryOp::kNe},
    {"__lt__", nullptr, BinaryOp::kLt}, {"__le__", nullptr, BinaryOp::kLe},
    {"__gt__", nullptr, BinaryOp::kGt}, {"__ge__", nullptr, BinaryOp::kGe},
};
constexpr BinaryDunder kInPlace[] = {
    {"__iadd__", nullptr, BinaryOp::kAdd},           {"__isub__", nullptr, BinaryOp::kSub},
    {"__imul__", nullptr, BinaryOp::kMul},           {"__itruediv__", nullptr, BinaryOp::kDiv},
    {"__ifloordiv__", nullptr, BinaryOp::kFloorDiv}, {"__imod__", nullptr, BinaryOp::kMod},
    {"__ipow__", nullptr, BinaryOp::kPow},           {"__iand__", nullptr, BinaryOp::kBitAnd},
    {"__ior__", nullptr, BinaryOp::kBitOr},          {"__ixor__", nullptr, BinaryOp::kBitXor},
    {"__ilshift__", nullptr, BinaryOp::kShl},        {"__irshift__", nullptr, BinaryOp::kShr},
};

// Tile methods named as asc2's (x.sum(), x.max(), ...).
struct NamedReduce {
  const char* name;
  tl::ReduceOp op;
};
constexpr NamedReduce kMethodReductions[] = {
    {"sum", tl::ReduceOp::kSum},   {"max", tl::ReduceOp::kMax},   {"min", tl::ReduceOp::kMin},
    {"mean", tl::ReduceOp::kMean}, {"prod", tl::ReduceOp::kProd},
};

// `if v:`, `while v:`, `and`/`or`/`not`, int(v): a traced value is not known while tracing.
[[noreturn]] void no_python_value(const char* what) {
  fail_at(ErrorKind::kInvalidArgument, caller_loc(), what,
          "a traced Value has no Python value at trace time; use tl.if_(cond, then, else_) for "
          "a runtime branch, tl.where(cond, a, b) to select lanes, tl.logical_and/or/not "
          "instead of and/or/not, and tl.ConstExpr parameters for trace-time values");
}

tl::RoundMode to_round_mode(py::handle obj) {
  if (py::isinstance<tl::RoundMode>(obj)) return py::cast<tl::RoundMode>(obj);
  const std::string name = py::str(obj);
  for (auto mode : {tl::RoundMode::kRint, tl::RoundMode::kFloor, tl::RoundMode::kCeil,
                    tl::RoundMode::kTrunc, tl::RoundMode::kHalfAway}) {
    if (name == tl::name_of(mode)) return mode;
  }
  if (name == "half_away" || name == "round") return tl::RoundMode::kHalfAway;
  fail_at(
      ErrorKind::kInvalidArgument, caller_loc(), "to",
      "round_mode must be one of rint, floor, ceil, trunc, round_half_away, got '" + name + "'");
}

std::string repr(const tl::Value& v) {
  if (!v.valid()) return "Value(unset)";
  try {
    return "Value(%" + std::to_string(v.id()) + ": " + v.type().to_string() + ")";
  } catch (const Error&) {
    return "Value(%" + std::to_string(v.id()) + ", outside its trace)";
  }
}

void bind_enums(py::module_& tl) {
  py::enum_<DataType> dtype(tl, "DataType", "Element types of tiles and tensors.");
  for (int i = 0; i < kNumDataTypes; ++i) {
    const auto d = static_cast<DataType>(i);
    dtype.value(std::string(name_of(d)).c_str(), d);
  }
  dtype.def("__str__", [](DataType d) { return std::string(name_of(d)); });
  py::enum_<tl::RoundMode> mode(tl, "RoundMode", "Rounding of .to() casts.");
  for (auto m : {tl::RoundMode::kRint, tl::RoundMode::kFloor, tl::RoundMode::kCeil,
                 tl::RoundMode::kTrunc, tl::RoundMode::kHalfAway}) {
    mode.value(tl::name_of(m), m);
  }
  py::enum_<tl::TileLocation> location(
      tl, "TileLocation",
      "asc2's tile placement hint for tl.load(location=): UB (vector buffer), L1 (cube staging), "
      "L0A / L0B (a matmul's left / right operand), L0C (its accumulator), BT (its bias), FB "
      "(fixpipe). Checked against the tile's uses; no effect on CPU code.");
  for (auto l : {tl::TileLocation::kUB, tl::TileLocation::kL1, tl::TileLocation::kL0A,
                 tl::TileLocation::kL0B, tl::TileLocation::kL0C, tl::TileLocation::kBT,
                 tl::TileLocation::kFB}) {
    location.value(tl::name_of(l), l);
  }
}

}  // namespace

void bind_tl_values(py::module_& tl) {
  bind_enums(tl);
  add_trace_errors(tl);
  tl.def(
      "_set_int_division",
      [](const std::string& mode) {
        tl::IntDivision next = tl::IntDivision::kTrue;
        if (mode == "trunc") {
          next = tl::IntDivision::kTrunc;
        } else if (mode != "default") {
          throw_argument_error(ErrorKind::kInvalidArgument, "tl._set_int_division", "mode",
                               "'trunc' or 'default'", "'" + mode + "'");
        }
        return tl::set_int_division(next) == tl::IntDivision::kTrunc ? "trunc" : "default";
      },
      py::arg("mode"),
      "This thread's integer `/` while tracing: 'trunc' (asc2: an integer quotient truncated "
      "toward zero) or 'default' (true division in float32). Returns the previous mode.");
  py::class_<tl::Value> value(tl, "Value",
                              "A traced scalar, tile (static shape) or global tensor. Valid only "
                              "while the kernel that made it is being traced.");
  value
      .def_property_readonly("shape",
                             [](const tl::Value& v) { return py::tuple(py::cast(v.shape())); })
      .def_property_readonly("dtype", &tl::Value::dtype)
      .def_property_readonly("size", &tl::Value::size)
      .def_property_readonly("is_tile", &tl::Value::is_tile)
      .def_property_readonly("is_scalar", &tl::Value::is_scalar)
      .def_property_readonly("T", [](const tl::Value& v) { return v.T(caller_loc()); })
      .def(
          "to",
          [](const tl::Value& v, py::handle dtype, py::handle round_mode) {
            const tl::Loc loc = caller_loc();
            return v.to(to_dtype(dtype, "to", "dtype"), to_round_mode(round_mode), loc);
          },
          py::arg("dtype"), py::arg("round_mode") = "rint",
          "Cast with a round mode: rint (ties to even), floor, ceil, trunc, round_half_away.")
      .def(
          "bitcast",
          [](const tl::Value& v, py::handle dtype) {
            const tl::Loc loc = caller_loc();
            return v.bitcast(to_dtype(dtype, "bitcast", "dtype"), loc);
          },
          py::arg("dtype"),
          "The same bits read as `dtype`, of the same size (float32 <-> int32, float16 <-> "
          "int16, ...).")
      .def(
          "dim", [](const tl::Value& v, int axis) { return v.dim(axis, caller_loc()); },
          py::arg("axis"), "A global tensor's runtime extent along `axis` (an int64 scalar).")
      .def("__repr__", &repr)
      .def("transpose", &transpose_call, py::arg("permutation") = py::none(),
           "x.transpose() reverses the dims; x.transpose(1, 0) or x.transpose([1, 0]).")
      .def("reshape", &reshape_call, py::arg("shape") = py::none(),
           "x.reshape(4, 16) or x.reshape([4, 16]).")
      .def("__bool__", [](const tl::Value&) -> bool { no_python_value("bool"); })
      .def("__index__", [](const tl::Value&) -> std::int64_t { no_python_value("int"); })
      .def("__float__", [](const tl::Value&) -> double { no_python_value("float"); })
      .def("__iter__", [](const tl::Value&) -> py::object { no_python_value("iter"); })
      .def("__neg__", [](py::handle x) { return unary(UnaryOp::kNegative, x); })
      .def("__pos__", [](const tl::Value& x) { return x; })
      .def("__abs__", [](py::handle x) { return unary(UnaryOp::kAbs, x); })
      .def("__invert__", [](py::handle x) { return unary(UnaryOp::kBitNot, x); })
      .def("__matmul__",
           [](const tl::Value& a, const tl::Value& b) {
             return tl::matmul(a, b, tl::Value(), caller_loc());
           })
      .def("__rmatmul__", [](const tl::Value& b, const tl::Value& a) {
        return tl::matmul(a, b, tl::Value(), caller_loc());
      });
  for (const NamedReduce& r : kMethodReductions) {
    const tl::ReduceOp op = r.op;
    value.def(
        r.name,
        [op](py::handle x, const py::args& axes, py::handle dims, py::handle axis, bool keep_dims) {
          return reduce_call(op, x, axes, dims, axis, keep_dims);
        },
        py::arg("dims") = py::none(), py::arg("axis") = py::none(), py::arg("keep_dims") = false,
        "Reduction over the axes given as ints (x.sum(0, 1)), one int or sequence, or "
        "dims=/axis=; none = everything (a scalar). keep_dims is keyword-only.");
  }
  for (const BinaryDunder& d : kBinaryDunders) {
    const BinaryOp op = d.op;
    value.def(d.name, [op](py::handle a, py::handle b) { return binary(op, a, b); });
    value.def(d.reflected, [op](py::handle a, py::handle b) { return binary(op, b, a); });
  }
  for (const BinaryDunder& d : kComparisons) {
    const BinaryOp op = d.op;
    value.def(d.name, [op](py::handle a, py::handle b) { return binary(op, a, b); });
  }
  value.attr("__hash__") = py::none();  // == builds a tile: Values are not dict keys
  // numpy scalars on the left defer to our reflected operators instead of wrapping the Value.
  value.attr("__array_ufunc__") = py::none();

  py::class_<tl::Var, tl::Value, std::unique_ptr<tl::Var>> var(
      tl, "Var",
      "A mutable traced variable: `acc = tl.Var(init)`, then `acc.set(v)` or `acc += v`. "
      "Reassigned inside tl.range it becomes a loop-carried value, inside tl.if_ a branch "
      "result. Rebinding the Python name (`acc = acc + v`) does not update the Var.");
  var.def(py::init([](py::handle initial) {
            const tl::Loc loc = caller_loc();
            return std::make_unique<tl::Var>(to_operand(initial, loc, "Var", "initial").value);
          }),
          py::arg("initial"))
      .def(
          "set",
          [](tl::Var& self, py::handle v) {
            self = to_operand(v, caller_loc(), "Var.set", "value").value;
          },
          py::arg("value"), "Assigns a new value (same dtype and shape inside loops/branches).")
      .def_property_readonly(
          "value", [](const tl::Var& self) { return static_cast<const tl::Value&>(self); },
          "The current value as a plain (immutable) Value.");
  for (const BinaryDunder& d : kInPlace) {
    const BinaryOp op = d.op;
    var.def(d.name, [op](py::object self, py::handle other) {
      tl::Var& v = py::cast<tl::Var&>(self);
      v = binary(op, self, other);
      return self;
    });
  }
}

}  // namespace tileops::python
