// tileops._C.ops gemm, matmul and linear: free functions and class forms (Gemm, Matmul, Linear,
// LinearPacked), and linear's packed weights (pack_linear_weight -> PackedLinearWeight, which
// linear takes in place of the weight). An omitted output is allocated with the shape the
// contract implies.
#include <memory>
#include <optional>
#include <string>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

// [broadcast batch..., M, N] of op(a)·op(b); mismatches are left to the contract's checks,
// which name the argument (this only needs ranks >= 2 to index).
Dims product_shape(std::string_view op, const Tensor& a, bool ta, const Tensor& b, bool tb) {
  if (a.rank() < 2 || b.rank() < 2) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, a.rank() < 2 ? "a" : "b", "rank >= 2",
                         (a.rank() < 2 ? a : b).shape().to_string());
  }
  const Tensor batch_a = a.with_shape(Dims(std::span(a.shape().begin(), a.rank() - 2)),
                                      Dims(std::span(a.strides().begin(), a.rank() - 2)));
  const Tensor batch_b = b.with_shape(Dims(std::span(b.shape().begin(), b.rank() - 2)),
                                      Dims(std::span(b.strides().begin(), b.rank() - 2)));
  Dims shape = broadcast_shape(op, batch_a, batch_b);
  shape.push_back(ta ? a.size(-1) : a.size(-2));
  shape.push_back(tb ? b.size(-2) : b.size(-1));
  return shape;
}

Dims linear_shape(const Tensor& input, const Tensor& weight) {
  if (input.rank() < 1 || weight.rank() != 2) {
    throw_argument_error(ErrorKind::kInvalidArgument, "linear",
                         input.rank() < 1 ? "input" : "weight",
                         input.rank() < 1 ? "rank >= 1" : "rank 2 [N, K]",
                         (input.rank() < 1 ? input : weight).shape().to_string());
  }
  Dims shape = input.shape();
  shape[shape.size() - 1] = weight.size(0);
  return shape;
}

PyTensor gemm_output(py::handle c, const PyTensor& a, const PyTensor& b, bool ta, bool tb,
                     double beta) {
  if (c.is_none() && beta != 0.0) {
    throw_argument_error(ErrorKind::kInvalidArgument, "gemm", "c",
                         "a tensor when beta != 0 (c is read)", "None");
  }
  return output(c, a.frontend, product_shape("gemm", a.view, ta, b.view, tb), a.view.dtype(),
                "gemm", "c");
}

py::object gemm(py::handle a, py::handle b, double alpha, double beta, bool ta, bool tb,
                py::handle c, int index, py::handle stream) {
  Context ctx = make_context("gemm", index, stream);
  PyTensor x = to_tensor(a, "gemm", "a"), y = to_tensor(b, "gemm", "b");
  PyTensor o = gemm_output(c, x, y, ta, tb, beta);
  run_released([&] { ops::gemm(x.view, y.view, alpha, beta, ta, tb, o.view, ctx); });
  return result_of(c, o);
}

py::object matmul(py::handle a, py::handle b, py::handle c, bool ta, bool tb, int index,
                  py::handle stream) {
  Context ctx = make_context("matmul", index, stream);
  PyTensor x = to_tensor(a, "matmul", "a"), y = to_tensor(b, "matmul", "b");
  PyTensor o = output(c, x.frontend, product_shape("matmul", x.view, ta, y.view, tb),
                      x.view.dtype(), "matmul", "c");
  run_released([&] { ops::matmul(x.view, y.view, o.view, ta, tb, ctx); });
  return result_of(c, o);
}

struct LinearArgs {
  PyTensor input, weight, out;
  std::optional<PyTensor> bias;
  Tensor bias_view() const { return bias ? bias->view : Tensor(); }
};

LinearArgs linear_args(py::handle input, py::handle weight, py::handle bias, py::handle out) {
  LinearArgs args{
      to_tensor(input, "linear", "input"), to_tensor(weight, "linear", "weight"), {}, std::nullopt};
  if (!bias.is_none()) args.bias = to_tensor(bias, "linear", "bias");
  args.out = output(out, args.input.frontend, linear_shape(args.input.view, args.weight.view),
                    args.input.view.dtype(), "linear", "out");
  return args;
}

py::object linear(py::handle input, py::handle weight, py::handle bias, py::handle out, int index,
                  py::handle stream) {
  Context ctx = make_context("linear", index, stream);
  LinearArgs v = linear_args(input, weight, bias, out);
  run_released([&] { ops::linear(v.input.view, v.weight.view, v.bias_view(), v.out.view, ctx); });
  return result_of(out, v.out);
}

// pack_linear_weight's result: the packed tensor (torch or numpy, as the weight) and the [N, K]
// it came from, which linear needs to shape its output.
struct PackedLinearWeight {
  py::object data;
  std::int64_t n = 0, k = 0;
};

PackedLinearWeight pack_linear_weight(py::handle weight, py::handle out, int index,
                                      py::handle stream) {
  Context ctx = make_context("pack_linear_weight", index, stream);
  PyTensor w = to_tensor(weight, "pack_linear_weight", "weight");
  if (w.view.rank() != 2) {
    throw_argument_error(ErrorKind::kInvalidArgument, "pack_linear_weight", "weight",
                         "rank 2 [N, K]", w.view.shape().to_string());
  }
  const std::int64_t n = w.view.size(0), k = w.view.size(1);
  PyTensor o = output(out, w.frontend, Dims{ops::packed_linear_weight_numel(n, k, w.view.dtype())},
                      w.view.dtype(), "pack_linear_weight", "out");
  run_released([&] { ops::pack_linear_weight(w.view, o.view, ctx); });
  return PackedLinearWeight{result_of(out, o), n, k};
}

struct LinearPackedArgs {
  PyTensor input, packed, out;
  std::optional<PyTensor> bias;
  Tensor bias_view() const { return bias ? bias->view : Tensor(); }
};

LinearPackedArgs linear_packed_args(py::handle input, const PackedLinearWeight& packed,
                                    py::handle bias, py::handle out) {
  LinearPackedArgs args{to_tensor(input, "linear_packed", "input"),
                        to_tensor(packed.data, "linear_packed", "packed"),
                        {},
                        std::nullopt};
  if (!bias.is_none()) args.bias = to_tensor(bias, "linear_packed", "bias");
  if (args.input.view.rank() < 1) {
    throw_argument_error(ErrorKind::kInvalidArgument, "linear_packed", "input", "rank >= 1",
                         args.input.view.shape().to_string());
  }
  if (args.input.view.size(-1) != packed.k) {
    throw_argument_error(ErrorKind::kInvalidArgument, "linear_packed", "input",
                         "last dim K = " + std::to_string(packed.k) + " of the packed weight",
                         args.input.view.shape().to_string());
  }
  Dims shape = args.input.view.shape();
  shape[shape.size() - 1] = packed.n;
  args.out =
      output(out, args.input.frontend, shape, args.input.view.dtype(), "linear_packed", "out");
  return args;
}

py::object linear_packed(py::handle input, const PackedLinearWeight& packed, py::handle bias,
                         py::handle out, int index, py::handle stream) {
  Context ctx = make_context("linear_packed", index, stream);
  LinearPackedArgs v = linear_packed_args(input, packed, bias, out);
  run_released(
      [&] { ops::linear_packed(v.input.view, v.packed.view, v.bias_view(), v.out.view, ctx); });
  return result_of(out, v.out);
}

// linear with a PackedLinearWeight in place of the weight is linear_packed.
py::object linear_any(py::handle input, py::handle weight, py::handle bias, py::handle out,
                      int index, py::handle stream) {
  if (py::isinstance<PackedLinearWeight>(weight)) {
    return linear_packed(input, weight.cast<const PackedLinearWeight&>(), bias, out, index, stream);
  }
  return linear(input, weight, bias, out, index, stream);
}

class LinearPacked {
 public:
  LinearPacked(py::handle input, const PackedLinearWeight& packed, py::handle bias, py::handle out,
               int index) {
    LinearPackedArgs v = linear_packed_args(input, packed, bias, out);
    op_ = std::make_shared<ops::LinearPacked>(v.input.view, v.packed.view, v.bias_view(),
                                              v.out.view, index);
  }
  py::object call(py::handle input, const PackedLinearWeight& packed, py::handle bias,
                  py::handle out, py::handle stream) const {
    Context ctx = make_context("linear_packed", 0, stream);
    LinearPackedArgs v = linear_packed_args(input, packed, bias, out);
    run_released([&] { (*op_)(v.input.view, v.packed.view, v.bias_view(), v.out.view, ctx); });
    return result_of(out, v.out);
  }

 private:
  std::shared_ptr<const ops::LinearPacked> op_;
};

class Gemm {
 public:
  Gemm(py::handle a, py::handle b, double alpha, double beta, bool ta, bool tb, py::handle c,
       int index)
      : ta_(ta), tb_(tb), beta_(beta) {
    PyTensor x = to_tensor(a, "gemm", "a"), y = to_tensor(b, "gemm", "b");
    PyTensor o = gemm_output(c.is_none() ? py::none() : c, x, y, ta, tb, 0.0);
    op_ = std::make_shared<ops::Gemm>(x.view, y.view, alpha, beta, ta, tb, o.view, index);
  }
  py::object call(py::handle a, py::handle b, py::handle c, py::handle stream) const {
    Context ctx = make_context("gemm", 0, stream);
    PyTensor x = to_tensor(a, "gemm", "a"), y = to_tensor(b, "gemm", "b");
    PyTensor o = gemm_output(c, x, y, ta_, tb_, beta_);
    run_released([&] { (*op_)(x.view, y.view, o.view, ctx); });
    return result_of(c, o);
  }

 private:
  bool ta_, tb_;
  double beta_;
  std::shared_ptr<const ops::Gemm> op_;
};

class Matmul {
 public:
  Matmul(py::handle a, py::handle b, py::handle c, bool ta, bool tb, int index) : ta_(ta), tb_(tb) {
    PyTensor x = to_tensor(a, "matmul", "a"), y = to_tensor(b, "matmul", "b");
    PyTensor o = output(c, x.frontend, product_shape("matmul", x.view, ta, y.view, tb),
                        x.view.dtype(), "matmul", "c");
    op_ = std::make_shared<ops::Matmul>(x.view, y.view, o.view, ta, tb, index);
  }
  py::object call(py::handle a, py::handle b, py::handle c, py::handle stream) const {
    Context ctx = make_context("matmul", 0, stream);
    PyTensor x = to_tensor(a, "matmul", "a"), y = to_tensor(b, "matmul", "b");
    PyTensor o = output(c, x.frontend, product_shape("matmul", x.view, ta_, y.view, tb_),
                        x.view.dtype(), "matmul", "c");
    run_released([&] { (*op_)(x.view, y.view, o.view, ctx); });
    return result_of(c, o);
  }

 private:
  bool ta_, tb_;
  std::shared_ptr<const ops::Matmul> op_;
};

class Linear {
 public:
  Linear(py::handle input, py::handle weight, py::handle bias, py::handle out, int index) {
    LinearArgs v = linear_args(input, weight, bias, out);
    op_ = std::make_shared<ops::Linear>(v.input.view, v.weight.view, v.bias_view(), v.out.view,
                                        index);
  }
  py::object call(py::handle input, py::handle weight, py::handle bias, py::handle out,
                  py::handle stream) const {
    Context ctx = make_context("linear", 0, stream);
    LinearArgs v = linear_args(input, weight, bias, out);
    run_released([&] { (*op_)(v.input.view, v.weight.view, v.bias_view(), v.out.view, ctx); });
    return result_of(out, v.out);
  }

 private:
  std::shared_ptr<const ops::Linear> op_;
};

}  // namespace

void bind_gemm_ops(py::module_& m) {
  const py::object none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
  m.def("gemm", &gemm, "c = alpha * op(a) @ op(b) + beta * c (2-D or batched 3-D).", py::arg("a"),
        py::arg("b"), py::arg("alpha") = 1.0, py::arg("beta") = 0.0, py::arg("trans_a") = false,
        py::arg("trans_b") = false, py::arg("c") = none, py::kw_only(), index, stream);
  m.def("matmul", &matmul, "c = op(a) @ op(b), batch dims broadcast.", py::arg("a"), py::arg("b"),
        py::arg("c") = none, py::arg("trans_a") = false, py::arg("trans_b") = false, py::kw_only(),
        index, stream);
  py::class_<PackedLinearWeight>(m, "PackedLinearWeight",
                                 "A linear weight in the packed layout of the decode kernels "
                                 "(from pack_linear_weight).")
      .def_readonly("data", &PackedLinearWeight::data, "The packed 1-D tensor.")
      .def_readonly("n", &PackedLinearWeight::n, "Rows N of the weight it packs.")
      .def_readonly("k", &PackedLinearWeight::k, "Columns K of the weight it packs.")
      .def("__repr__", [](const PackedLinearWeight& p) {
        return "PackedLinearWeight(n=" + std::to_string(p.n) + ", k=" + std::to_string(p.k) + ")";
      });
  m.def("linear", &linear_any,
        "out = input @ weight.T + bias (weight [N, K], or its PackedLinearWeight).",
        py::arg("input"), py::arg("weight"), py::arg("bias") = none, py::arg("out") = none,
        py::kw_only(), index, stream);
  m.def("pack_linear_weight", &pack_linear_weight,
        "The packed form of a [N, K] linear weight, which linear streams faster for up to 16 "
        "rows; `out` (1-D, packed_linear_weight_numel elements) receives it when given.",
        py::arg("weight"), py::arg("out") = none, py::kw_only(), index, stream);
  m.def(
      "packed_linear_weight_numel",
      [](std::int64_t n, std::int64_t k, py::handle dtype) {
        return ops::packed_linear_weight_numel(
            n, k, parse_dtype(dtype, "packed_linear_weight_numel", "dtype"));
      },
      "Elements of pack_linear_weight's form of an [n, k] weight of dtype.", py::arg("n"),
      py::arg("k"), py::arg("dtype"));
  m.def("linear_packed", &linear_packed,
        "out = input @ weight.T + bias with the weight as pack_linear_weight(weight).",
        py::arg("input"), py::arg("packed"), py::arg("bias") = none, py::arg("out") = none,
        py::kw_only(), index, stream);
  py::class_<Gemm>(m, "Gemm")
      .def(py::init<py::handle, py::handle, double, double, bool, bool, py::handle, int>(),
           py::arg("a"), py::arg("b"), py::arg("alpha") = 1.0, py::arg("beta") = 0.0,
           py::arg("trans_a") = false, py::arg("trans_b") = false, py::arg("c") = none,
           py::kw_only(), index)
      .def("__call__", &Gemm::call, py::arg("a"), py::arg("b"), py::arg("c") = none, py::kw_only(),
           stream);
  py::class_<Matmul>(m, "Matmul")
      .def(py::init<py::handle, py::handle, py::handle, bool, bool, int>(), py::arg("a"),
           py::arg("b"), py::arg("c") = none, py::arg("trans_a") = false,
           py::arg("trans_b") = false, py::kw_only(), index)
      .def("__call__", &Matmul::call, py::arg("a"), py::arg("b"), py::arg("c") = none,
           py::kw_only(), stream);
  py::class_<Linear>(m, "Linear")
      .def(py::init<py::handle, py::handle, py::handle, py::handle, int>(), py::arg("input"),
           py::arg("weight"), py::arg("bias") = none, py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &Linear::call, py::arg("input"), py::arg("weight"), py::arg("bias") = none,
           py::arg("out") = none, py::kw_only(), stream);
  py::class_<LinearPacked>(m, "LinearPacked")
      .def(py::init<py::handle, const PackedLinearWeight&, py::handle, py::handle, int>(),
           py::arg("input"), py::arg("packed"), py::arg("bias") = none, py::arg("out") = none,
           py::kw_only(), index)
      .def("__call__", &LinearPacked::call, py::arg("input"), py::arg("packed"),
           py::arg("bias") = none, py::arg("out") = none, py::kw_only(), stream);
}

}  // namespace tileops::python
