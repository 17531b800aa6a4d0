// tl functions on global memory, tile creation and elementwise computation (SPEC_TL.md), each
// traced at the caller's Python line.
#include <pybind11/stl.h>

#include <string>

#include "python/src/tl_bindings.h"
#include "tileops/core/error.h"

namespace tileops::python {
namespace {

using tl::BinaryOp;
using tl::UnaryOp;

// offsets=[...] or tile_id=[...]: exactly one of them.
template <typename Offsets, typename TileId>
void with_offsets(const char* construct, const tl::Loc& loc, py::handle offsets, py::handle tile_id,
                  Offsets&& by_offsets, TileId&& by_tile_id) {
  if (offsets.is_none() == tile_id.is_none()) {
    fail_at(ErrorKind::kInvalidArgument, loc, construct,
            "give exactly one of offsets=[...] and tile_id=[...]");
  }
  if (!offsets.is_none()) {
    by_offsets(to_operands(offsets, loc, construct, "offsets"));
  } else {
    by_tile_id(tl::TileId{to_operands(tile_id, loc, construct, "tile_id")});
  }
}

tl::TileLocation to_location(py::handle obj, const tl::Loc& loc) {
  if (obj.is_none()) return tl::TileLocation::kAny;
  if (!py::isinstance<tl::TileLocation>(obj)) {
    fail_at(ErrorKind::kInvalidType, loc, "load",
            "location must be a tl.TileLocation (UB, L1, L0A, L0B, L0C, BT, FB), got " +
                std::string(py::repr(obj)));
  }
  return py::cast<tl::TileLocation>(obj);
}

tl::Value load(py::handle t, py::handle shape, py::handle offsets, py::handle tile_id,
               py::handle pad_value, py::handle location) {
  const tl::Loc loc = caller_loc();
  const tl::Value tensor = to_value(t, loc, "load", "tensor");
  const tl::Shape s = to_operands(shape, loc, "load", "shape");
  const tl::Operand pad = to_operand(pad_value, loc, "load", "pad_value");
  const tl::TileLocation where = to_location(location, loc);
  tl::Value result;
  with_offsets(
      "load", loc, offsets, tile_id,
      [&](const tl::IndexList& o) { result = tl::load(tensor, s, o, pad, where, loc); },
      [&](const tl::TileId& id) { result = tl::load(tensor, s, id, pad, where, loc); });
  return result;
}

void prefetch(py::handle t, py::handle shape, py::handle offsets) {
  const tl::Loc loc = caller_loc();
  tl::prefetch(to_value(t, loc, "prefetch", "tensor"), to_operands(shape, loc, "prefetch", "shape"),
               to_operands(offsets, loc, "prefetch", "offsets"), loc);
}

void store(py::handle value, py::handle t, py::handle offsets, py::handle tile_id) {
  const tl::Loc loc = caller_loc();
  const tl::Operand v = to_operand(value, loc, "store", "value");
  const tl::Value tensor = to_value(t, loc, "store", "tensor");
  with_offsets(
      "store", loc, offsets, tile_id, [&](const tl::IndexList& o) { tl::store(v, tensor, o, loc); },
      [&](const tl::TileId& id) { tl::store(v, tensor, id, loc); });
}

using AtomicFn = void (*)(const tl::Operand&, const tl::Value&, const tl::IndexList&, tl::Loc);

template <AtomicFn kFn>
void atomic(const char* construct, py::handle value, py::handle t, py::handle offsets) {
  const tl::Loc loc = caller_loc();
  kFn(to_operand(value, loc, construct, "value"), to_value(t, loc, construct, "tensor"),
      to_operands(offsets, loc, construct, "offsets"), loc);
}

void bind_memory(py::module_& tl) {
  tl.def(
      "tensor",
      [](py::handle ptr, py::handle shape, py::handle strides) {
        const tl::Loc loc = caller_loc();
        const tl::IndexList st =
            strides.is_none() ? tl::IndexList{} : to_operands(strides, loc, "tensor", "strides");
        return tl::tensor(to_value(ptr, loc, "tensor", "ptr"),
                          to_operands(shape, loc, "tensor", "shape"), st, loc);
      },
      py::arg("ptr"), py::arg("shape"), py::arg("strides") = py::none(),
      "A global view of a GlobalAddress with runtime extents (strides in elements).");
  tl.def("load", &load, py::arg("tensor"), py::arg("shape"), py::arg("offsets") = py::none(),
         py::arg("tile_id") = py::none(), py::arg("pad_value") = 0,
         py::arg("location") = py::none(),
         "A tile of static shape; out-of-bounds lanes read pad_value, never memory. location= "
         "(tl.TileLocation) is asc2's placement hint: checked against the tile's uses, no "
         "effect on results.");
  tl.def("prefetch", &prefetch, py::arg("tensor"), py::arg("shape"), py::arg("offsets"),
         "A hint that the tile at offsets will be loaded soon; no effect on results.");
  tl.def("store", &store, py::arg("value"), py::arg("tensor"), py::arg("offsets") = py::none(),
         py::arg("tile_id") = py::none(), "Writes the in-bounds (and unmasked) elements.");
  tl.def(
      "atomic_add",
      [](py::handle v, py::handle t, py::handle o) {
        atomic<tl::atomic_add>("atomic_add", v, t, o);
      },
      py::arg("value"), py::arg("tensor"), py::arg("offsets"));
  tl.def(
      "atomic_max",
      [](py::handle v, py::handle t, py::handle o) {
        atomic<tl::atomic_max>("atomic_max", v, t, o);
      },
      py::arg("value"), py::arg("tensor"), py::arg("offsets"));
  tl.def(
      "atomic_min",
      [](py::handle v, py::handle t, py::handle o) {
        atomic<tl::atomic_min>("atomic_min", v, t, o);
      },
      py::arg("value"), py::arg("tensor"), py::arg("offsets"));
}

void bind_creation(py::module_& tl) {
  tl.def(
      "full",
      [](py::handle shape, py::handle value, py::handle dtype) {
        const tl::Loc loc = caller_loc();
        return tl::full(to_operands(shape, loc, "full", "shape"),
                        to_operand(value, loc, "full", "value"), to_dtype(dtype, "full", "dtype"),
                        loc);
      },
      py::arg("shape"), py::arg("value"), py::arg("dtype"));
  tl.def(
      "zeros",
      [](py::handle shape, py::handle dtype) {
        const tl::Loc loc = caller_loc();
        return tl::zeros(to_operands(shape, loc, "zeros", "shape"),
                         to_dtype(dtype, "zeros", "dtype"), loc);
      },
      py::arg("shape"), py::arg("dtype"));
  tl.def(
      "full_like",
      [](py::handle tile, py::handle value) {
        const tl::Loc loc = caller_loc();
        return tl::full_like(to_value(tile, loc, "full_like", "tile"),
                             to_operand(value, loc, "full_like", "value"), loc);
      },
      py::arg("tile"), py::arg("value"));
  tl.def(
      "zeros_like",
      [](py::handle tile) {
        const tl::Loc loc = caller_loc();
        return tl::zeros_like(to_value(tile, loc, "zeros_like", "tile"), loc);
      },
      py::arg("tile"));
  tl.def(
      "arange",
      [](std::int64_t n, py::handle dtype) {
        return tl::arange(n, to_dtype(dtype, "arange", "dtype"), caller_loc());
      },
      py::arg("n"), py::arg("dtype") = DataType::kInt32, "0, 1, ..., n - 1 (iota).");
  tl.def(
      "copy",
      [](py::handle tile, py::handle shape, py::handle offsets) {
        const tl::Loc loc = caller_loc();
        return tl::copy(to_value(tile, loc, "copy", "tile"),
                        to_operands(shape, loc, "copy", "shape"),
                        to_operands(offsets, loc, "copy", "offsets"), loc);
      },
      py::arg("tile"), py::arg("shape"), py::arg("offsets"), "The sub-tile at static offsets.");
  tl.def(
      "concat",
      [](const py::sequence& tiles, int axis) {
        const tl::Loc loc = caller_loc();
        std::vector<tl::Value> values;
        for (py::handle t : tiles) values.push_back(to_value(t, loc, "concat", "tiles"));
        return tl::concat(values, axis, loc);
      },
      py::arg("tiles"), py::arg("axis") = 0);
}

struct NamedUnary {
  const char* name;
  UnaryOp op;
};
constexpr NamedUnary kUnaries[] = {
    {"abs", UnaryOp::kAbs},
    {"ceil", UnaryOp::kCeil},
    {"floor", UnaryOp::kFloor},
    {"round", UnaryOp::kRound},
    {"trunc", UnaryOp::kTrunc},
    {"exp", UnaryOp::kExp},
    {"exp2", UnaryOp::kExp2},
    {"expm1", UnaryOp::kExpm1},
    {"log", UnaryOp::kLog},
    {"log2", UnaryOp::kLog2},
    {"log1p", UnaryOp::kLog1p},
    {"sqrt", UnaryOp::kSqrt},
    {"rsqrt", UnaryOp::kRsqrt},
    {"sin", UnaryOp::kSin},
    {"cos", UnaryOp::kCos},
    {"tan", UnaryOp::kTan},
    {"sinh", UnaryOp::kSinh},
    {"cosh", UnaryOp::kCosh},
    {"tanh", UnaryOp::kTanh},
    {"erf", UnaryOp::kErf},
    {"sigmoid", UnaryOp::kSigmoid},
    {"relu", UnaryOp::kRelu},
    {"silu", UnaryOp::kSilu},
    {"softplus", UnaryOp::kSoftplus},
    {"negative", UnaryOp::kNegative},
    {"reciprocal", UnaryOp::kReciprocal},
    {"isnan", UnaryOp::kIsnan},
    {"isinf", UnaryOp::kIsinf},
    {"logical_not", UnaryOp::kLogicalNot},
    {"bitwise_not", UnaryOp::kBitNot},
};

struct NamedBinary {
  const char* name;
  BinaryOp op;
};
constexpr NamedBinary kBinaries[] = {
    {"add", BinaryOp::kAdd},
    {"sub", BinaryOp::kSub},
    {"mul", BinaryOp::kMul},
    {"div", BinaryOp::kDiv},
    {"floordiv", BinaryOp::kFloorDiv},
    {"mod", BinaryOp::kMod},
    {"maximum", BinaryOp::kMaximum},
    {"minimum", BinaryOp::kMinimum},
    {"pow", BinaryOp::kPow},
    {"logical_and", BinaryOp::kLogicalAnd},
    {"logical_or", BinaryOp::kLogicalOr},
};

void bind_elementwise(py::module_& tl) {
  for (const NamedUnary& u : kUnaries) {
    const UnaryOp op = u.op;
    tl.def(
        u.name,
        [op](py::handle x) {
          const tl::Loc loc = caller_loc();
          return tl::unary(op, to_operand(x, loc, tl::name_of(op), "x"), loc);
        },
        py::arg("x"));
  }
  for (const NamedBinary& b : kBinaries) {
    const BinaryOp op = b.op;
    tl.def(
        b.name,
        [op](py::handle a, py::handle c) {
          const tl::Loc loc = caller_loc();
          return tl::binary(op, to_operand(a, loc, tl::name_of(op), "a"),
                            to_operand(c, loc, tl::name_of(op), "b"), loc);
        },
        py::arg("a"), py::arg("b"));
  }
  tl.def(
      "gelu",
      [](py::handle x, bool approximate) {
        const tl::Loc loc = caller_loc();
        return tl::gelu(to_operand(x, loc, "gelu", "x"), approximate, loc);
      },
      py::arg("x"), py::arg("approximate") = false,
      "gelu, the erf form; the tanh approximation with approximate=True.");
  tl.def(
      "where",
      [](py::handle cond, py::handle a, py::handle b) {
        const tl::Loc loc = caller_loc();
        return tl::where(to_operand(cond, loc, "where", "cond"), to_operand(a, loc, "where", "a"),
                         to_operand(b, loc, "where", "b"), loc);
      },
      py::arg("cond"), py::arg("a"), py::arg("b"));
}

}  // namespace

void bind_tl_functions(py::module_& tl) {
  bind_memory(tl);
  bind_creation(tl);
  bind_elementwise(tl);
}

}  // namespace tileops::python
