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

void bind_reductions(py::module_& tl) {
  for (const NamedReduce& r : kReductions) {
    const ReduceOp op = r.op;
    tl.def(
        r.name,
        [op](py::handle x, py::handle dims, bool keep_dims) {
          const tl::Loc loc = caller_loc();
          const char* name = tl::name_of(op);
          return tl::reduce(op, to_value(x, loc, name, "x"), to_ints(dims, loc, name, "dims"),
                            keep_dims, loc);
        },
        py::arg("x"), py::arg("dims") = py::none(), py::arg("keep_dims") = false,
        "Over `dims` (an int or a sequence; None = everything, giving a scalar).");
  }
  tl.def(
      "argmax",
      [](py::handle x, int dim, bool keep_dims) {
        const tl::Loc loc = caller_loc();
        return tl::argmax(to_value(x, loc, "argmax", "x"), dim, keep_dims, loc);
      },
      py::arg("x"), py::arg("dim"), py::arg("keep_dims") = false);
  tl.def(
      "argmin",
      [](py::handle x, int dim, bool keep_dims) {
        const tl::Loc loc = caller_loc();
        return tl::argmin(to_value(x, loc, "argmin", "x"), dim, keep_dims, loc);
      },
      py::arg("x"), py::arg("dim"), py::arg("keep_dims") = false);
  tl.def(
      "cumsum",
      [](py::handle x, int axis) {
        const tl::Loc loc = caller_loc();
        return tl::cumsum(to_value(x, loc, "cumsum", "x"), axis, loc);
      },
      py::arg("x"), py::arg("axis") = -1);
}

void bind_shape(py::module_& tl) {
  tl.def(
      "reshape",
      [](py::handle x, py::handle shape) {
        const tl::Loc loc = caller_loc();
        return tl::reshape(to_value(x, loc, "reshape", "x"),
                           to_operands(shape, loc, "reshape", "shape"), loc);
      },
      py::arg("x"), py::arg("shape"));
  tl.def(
      "ravel",
      [](py::handle x) {
        const tl::Loc loc = caller_loc();
        return tl::ravel(to_value(x, loc, "ravel", "x"), loc);
      },
      py::arg("x"));
  tl.def(
      "expand_dims",
      [](py::handle x, int axis) {
        const tl::Loc loc = caller_loc();
        return tl::expand_dims(to_value(x, loc, "expand_dims", "x"), axis, loc);
      },
      py::arg("x"), py::arg("axis"));
  tl.def(
      "squeeze",
      [](py::handle x, int axis) {
        const tl::Loc loc = caller_loc();
        return tl::squeeze(to_value(x, loc, "squeeze", "x"), axis, loc);
      },
      py::arg("x"), py::arg("axis"));
  tl.def(
      "broadcast_to",
      [](py::handle x, py::handle shape) {
        const tl::Loc loc = caller_loc();
        return tl::broadcast_to(to_operand(x, loc, "broadcast_to", "x").value,
                                to_operands(shape, loc, "broadcast_to", "shape"), loc);
      },
      py::arg("x"), py::arg("shape"));
  tl.def(
      "transpose",
      [](py::handle x, py::handle permutation) {
        const tl::Loc loc = caller_loc();
        return tl::transpose(to_value(x, loc, "transpose", "x"),
                             to_ints(permutation, loc, "transpose", "permutation"), loc);
      },
      py::arg("x"), py::arg("permutation") = py::none());
}

void bind_builtins(py::module_& tl) {
  tl.def(
      "softmax",
      [](py::handle x, int axis) {
        const tl::Loc loc = caller_loc();
        return tl::softmax(to_value(x, loc, "softmax", "x"), axis, loc);
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
      [](py::handle x, py::handle gamma, py::handle beta, py::handle eps,
         bool return_stats) -> py::object {
        const tl::Loc loc = caller_loc();
        const tl::LayerNorm ln = tl::layer_norm(to_value(x, loc, "layer_norm", "x"),
                                                to_value(gamma, loc, "layer_norm", "gamma"),
                                                to_value(beta, loc, "layer_norm", "beta"),
                                                to_number(eps, loc, "layer_norm", "eps"), loc);
        if (!return_stats) return py::cast(ln.out);
        return py::make_tuple(ln.out, ln.mean, ln.rstd);
      },
      py::arg("x"), py::arg("gamma"), py::arg("beta"), py::arg("eps") = 1e-5,
      py::arg("return_stats") = false,
      "out, or (out, mean, rstd) with return_stats=True (mean/rstd float32, last dim kept).");
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
        // Two Python ints stay a Python int: shapes computed from ConstExprs remain static.
        if (PyLong_Check(a.ptr()) && PyLong_Check(b.ptr()) && !PyBool_Check(a.ptr()) &&
            !PyBool_Check(b.ptr())) {
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
      [](py::handle t, int axis, std::int64_t tile) {
        const tl::Loc loc = caller_loc();
        return tl::num_tiles(to_value(t, loc, "num_tiles", "tensor"), axis, tile, loc);
      },
      py::arg("tensor"), py::arg("axis"), py::arg("tile"));
}

}  // namespace

void bind_tl_nn_functions(py::module_& tl) {
  bind_reductions(tl);
  bind_shape(tl);
  bind_builtins(tl);
  bind_programming_model(tl);
}

}  // namespace tileops::python
