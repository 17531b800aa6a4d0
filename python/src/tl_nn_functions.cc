// tl reductions, scans, shape ops, built-ins (softmax, rms_norm, layer_norm), matmul and the
// programming-model queries (block_idx, block_num, ceildiv, num_tiles).
#include <pybind11/stl.h>

#include "python/src/errors.h"
#include "python/src/tl_bindings.h"

namespace tileops::python {
namespace {

using tl::ReduceOp;

struct NamedReduce {
  const char* name;
  ReduceOp op;
};
constexpr NamedReduce kReductions[] = {
    {"reduce_sum", ReduceOp::kSum},   {"reduce_max", ReduceOp::kMax},
    {"reduce_min", ReduceOp::kMin},   {"reduce_prod", ReduceOp::kProd},
    {"reduce_mean", ReduceOp::kMean}, {"all", ReduceOp::kAll},
    {"any", ReduceOp::kAny},
};

// Value for arguments that a Python number may also fill (broadcast_to of a scalar).
tl::Value value_or_number(py::handle x, const tl::Loc& loc, const char* construct) {
  return to_operand(x, loc, construct, "x").value;
}

void bind_reductions(py::module_& tl) {
  for (const NamedReduce& r : kReductions) {
    const ReduceOp op = r.op;
    tl.def(
        r.name,
        [op](py::handle x, const py::args& axes, py::handle dims, py::handle axis, bool keep_dims) {
          return reduce_call(op, x, axes, dims, axis, keep_dims);
        },
        py::arg("x"), py::arg("dims") = py::none(), py::arg("axis") = py::none(),
        py::arg("keep_dims") = false,
        "Over the axes given as ints (reduce_sum(x, 0, 1)), one int or sequence, or dims=/axis=; "
        "none or None = everything, giving a scalar. keep_dims is keyword-only.");
  }
  for (const auto& [name, op] :
       {std::pair{"argmax", ReduceOp::kArgmax}, std::pair{"argmin", ReduceOp::kArgmin}}) {
    const ReduceOp arg_op = op;
    const char* construct = name;
    tl.def(
        name,
        [arg_op, construct](py::handle x, py::handle dim, const py::args& extra, bool keep_dims) {
          const tl::Loc loc = caller_loc();
          if (!extra.empty()) {
            fail_at(ErrorKind::kInvalidType, loc, construct,
                    "takes one dim, got " + std::to_string(extra.size() + 1) +
                        " positional; keep_dims is keyword-only: write keep_dims=True");
          }
          if (is_bool(dim)) {
            fail_at(ErrorKind::kInvalidType, loc, construct,
                    "dim must be an int, got bool; keep_dims is keyword-only: write "
                    "keep_dims=True");
          }
          return tl::reduce(arg_op, to_value(x, loc, construct, "x"),
                            {to_int(dim, loc, construct, "dim")}, keep_dims, loc);
        },
        py::arg("x"), py::arg("dim"), py::arg("keep_dims") = false);
  }
  tl.def(
      "cumsum",
      [](py::handle x, py::handle axis) {
        const tl::Loc loc = caller_loc();
        return tl::cumsum(to_value(x, loc, "cumsum", "x"), to_int(axis, loc, "cumsum", "axis"),
                          loc);
      },
      py::arg("x"), py::arg("axis") = -1);
  tl.def(
      "sort",
      [](py::handle x, py::handle axis, bool descending) {
        const tl::Loc loc = caller_loc();
        return tl::sort(to_value(x, loc, "sort", "x"), to_int(axis, loc, "sort", "axis"),
                        descending, loc);
      },
      py::arg("x"), py::arg("axis") = -1, py::kw_only(), py::arg("descending") = false,
      "The values of x sorted along axis, stable (NaN above +inf, -0.0 == 0.0).");
  tl.def(
      "argsort",
      [](py::handle x, py::handle axis, bool descending) {
        const tl::Loc loc = caller_loc();
        return tl::argsort(to_value(x, loc, "argsort", "x"), to_int(axis, loc, "argsort", "axis"),
                           descending, loc);
      },
      py::arg("x"), py::arg("axis") = -1, py::kw_only(), py::arg("descending") = false,
      "The int32 positions along axis that sort x (stable: ties keep their order).");
  tl.def(
      "topk",
      [](py::handle x, py::handle k, py::handle axis, bool largest) {
        const tl::Loc loc = caller_loc();
        auto [values, indices] =
            tl::topk(to_value(x, loc, "topk", "x"), to_int(k, loc, "topk", "k"),
                     to_int(axis, loc, "topk", "axis"), largest, loc);
        return py::make_tuple(values, indices);
      },
      py::arg("x"), py::arg("k"), py::arg("axis") = -1, py::kw_only(), py::arg("largest") = true,
      "(values, int32 indices) of the k largest (largest=False: smallest) along axis, in order.");
}

void bind_shape(py::module_& tl) {
  tl.def(
      "reshape",
      [](py::handle x, const py::args& shape, py::handle shape_kw) {
        return reshape_call(x, shape, shape_kw);
      },
      py::arg("x"), py::arg("shape") = py::none(),
      "reshape(x, [4, 16]) or reshape(x, 4, 16): the same elements in row-major order.");
  tl.def(
      "ravel",
      [](py::handle x) {
        const tl::Loc loc = caller_loc();
        return tl::ravel(to_value(x, loc, "ravel", "x"), loc);
      },
      py::arg("x"));
  tl.def(
      "expand_dims",
      [](py::handle x, py::handle axis) {
        const tl::Loc loc = caller_loc();
        return tl::expand_dims(to_value(x, loc, "expand_dims", "x"),
                               to_int(axis, loc, "expand_dims", "axis"), loc);
      },
      py::arg("x"), py::arg("axis"));
  tl.def(
      "squeeze",
      [](py::handle x, py::handle axis) {
        const tl::Loc loc = caller_loc();
        return tl::squeeze(to_value(x, loc, "squeeze", "x"), to_int(axis, loc, "squeeze", "axis"),
                           loc);
      },
      py::arg("x"), py::arg("axis"));
  tl.def(
      "broadcast_to",
      [](py::handle x, const py::args& shape, py::handle shape_kw) {
        const tl::Loc loc = caller_loc();
        const py::object s = one_list(shape, shape_kw, "shape", loc, "broadcast_to");
        if (s.is_none())
          fail_at(ErrorKind::kInvalidArgument, loc, "broadcast_to", "no shape given");
        return tl::broadcast_to(value_or_number(x, loc, "broadcast_to"),
                                to_operands(s, loc, "broadcast_to", "shape"), loc);
      },
      py::arg("x"), py::arg("shape") = py::none(),
      "broadcast_to(x, [4, 8]) or broadcast_to(x, 4, 8) (NumPy rules; a scalar fills a tile).");
  tl.def(
      "transpose",
      [](py::handle x, const py::args& axes, py::handle permutation) {
        return transpose_call(x, axes, permutation);
      },
      py::arg("x"), py::arg("permutation") = py::none(),
      "transpose(x) reverses the dims; transpose(x, 1, 0) or transpose(x, [1, 0]) permutes.");
}

void bind_builtins(py::module_& tl) {
  tl.def(
      "softmax",
      [](py::handle x, py::handle axis) {
        const tl::Loc loc = caller_loc();
        return tl::softmax(to_value(x, loc, "softmax", "x"), to_int(axis, loc, "softmax", "axis"),
                           loc);
      },
      py::arg("x"), py::arg("axis") = -1);
  tl.def(
      "rms_norm",
      [](py::handle x, py::handle gamma, py::handle eps) {
        const tl::Loc loc = caller_loc();
        return tl::rms_norm(to_value(x, loc, "rms_norm", "x"),
                            to_value(gamma, loc, "rms_norm", "gamma"),
                            to_number(eps, loc, "rms_norm", "eps"), loc);
      },
      py::arg("x"), py::arg("gamma"), py::arg("eps") = 1e-6);
  tl.def(
      "layer_norm",
      [](py::handle x, py::handle gamma, py::handle beta, py::handle eps, bool keep_dims,
         py::handle return_stats) -> py::object {
        const tl::Loc loc = caller_loc();
        // return_stats (before asc2's form): False gives out alone, True the stats with the
        // last dim kept.
        const bool legacy = !return_stats.is_none();
        const bool stats = !legacy || truth_of(return_stats);
        const tl::LayerNorm ln = tl::layer_norm(
            to_value(x, loc, "layer_norm", "x"), to_value(gamma, loc, "layer_norm", "gamma"),
            to_value(beta, loc, "layer_norm", "beta"), to_number(eps, loc, "layer_norm", "eps"),
            keep_dims || legacy, loc);
        if (!stats) return py::cast(ln.out);
        return py::make_tuple(ln.out, ln.mean, ln.rstd);
      },
      py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("eps") = 1e-5, py::kw_only(),
      py::arg("keep_dims") = false, py::arg("return_stats") = py::none(),
      "(out, mean, rstd) as asc2: mean and rstd float32 (float64 for float64 x) with the "
      "normalised last dim removed ([R, C] -> [R]), or kept as 1 with keep_dims=True. "
      "return_stats=False gives out alone (return_stats=True: the stats with the dim kept).");
  tl.def(
      "matmul",
      [](py::handle a, py::handle b, py::handle bias) {
        const tl::Loc loc = caller_loc();
        const tl::Value c = bias.is_none() ? tl::Value() : to_value(bias, loc, "matmul", "bias");
        return tl::matmul(to_value(a, loc, "matmul", "a"), to_value(b, loc, "matmul", "b"), c, loc);
      },
      py::arg("a"), py::arg("b"), py::arg("bias") = py::none(),
      "[M, K] @ [K, N] -> float32 [M, N] (+ bias broadcast to [M, N]).");
  tl.def(
      "matmul_acc",
      [](py::handle acc, py::handle a, py::handle b) {
        const tl::Loc loc = caller_loc();
        return tl::matmul_acc(to_value(acc, loc, "matmul_acc", "acc"),
                              to_value(a, loc, "matmul_acc", "a"),
                              to_value(b, loc, "matmul_acc", "b"), loc);
      },
      py::arg("acc"), py::arg("a"), py::arg("b"), "acc + a @ b (acc float32 [M, N]).");
}

void bind_programming_model(py::module_& tl) {
  tl.def("block_idx", [] { return tl::block_idx(caller_loc()); });
  tl.def("block_num", [] { return tl::block_num(caller_loc()); });
  tl.def(
      "ceildiv",
      [](py::handle a, py::handle b) -> py::object {
        // Two ints (Python or numpy) give a Python int: host-side tiling math, and shapes
        // computed from ConstExprs inside a kernel stay static.
        const auto host_int = [](py::handle v) {
          return PyIndex_Check(v.ptr()) && !is_bool(v) && !py::isinstance<tl::Value>(v);
        };
        if (host_int(a) && host_int(b)) {
          const auto n = int_arg(a, "tl.ceildiv", "a"), d = int_arg(b, "tl.ceildiv", "b");
          if (d != 0 && !(d == -1 && n == INT64_MIN)) {  // INT64_MIN / -1 overflows
            const bool round_up = n % d != 0 && (n < 0) == (d < 0);
            return py::int_(n / d + (round_up ? 1 : 0));
          }
        }
        const tl::Loc loc = caller_loc();
        return py::cast(tl::ceildiv(to_operand(a, loc, "ceildiv", "a"),
                                    to_operand(b, loc, "ceildiv", "b"), loc));
      },
      py::arg("a"), py::arg("b"));
  tl.def(
      "num_tiles",
      [](py::handle t, py::handle axis, py::handle tile) {
        const tl::Loc loc = caller_loc();
        return tl::num_tiles(to_value(t, loc, "num_tiles", "tensor"),
                             to_int(axis, loc, "num_tiles", "axis"),
                             int_arg(tile, "tl.num_tiles", "tile"), loc);
      },
      py::arg("tensor"), py::arg("axis"), py::arg("tile"));
}

}  // namespace

tl::Value reduce_call(ReduceOp op, py::handle x, const py::args& axes, py::handle dims,
                      py::handle axis, bool keep_dims) {
  const tl::Loc loc = caller_loc();
  const char* name = tl::name_of(op);
  if (!dims.is_none() && !axis.is_none()) {
    fail_at(ErrorKind::kInvalidArgument, loc, name, "give dims= or axis=, not both");
  }
  const bool by_axis = !axis.is_none();
  return tl::reduce(op, to_value(x, loc, name, "x"),
                    to_axes(axes, by_axis ? axis : dims, by_axis ? "axis" : "dims", loc, name),
                    keep_dims, loc);
}

tl::Value transpose_call(py::handle x, const py::args& axes, py::handle permutation) {
  const tl::Loc loc = caller_loc();
  return tl::transpose(to_value(x, loc, "transpose", "x"),
                       to_axes(axes, permutation, "permutation", loc, "transpose"), loc);
}

tl::Value reshape_call(py::handle x, const py::args& shape, py::handle shape_kw) {
  const tl::Loc loc = caller_loc();
  const py::object s = one_list(shape, shape_kw, "shape", loc, "reshape");
  if (s.is_none()) fail_at(ErrorKind::kInvalidArgument, loc, "reshape", "no shape given");
  return tl::reshape(to_value(x, loc, "reshape", "x"), to_operands(s, loc, "reshape", "shape"),
                     loc);
}

void bind_tl_nn_functions(py::module_& tl) {
  bind_reductions(tl);
  bind_shape(tl);
  bind_builtins(tl);
  bind_programming_model(tl);
}

}  // namespace tileops::python
