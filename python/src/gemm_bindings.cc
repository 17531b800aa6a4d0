// tileops._C.ops bindings of the matrix products that the declarations cannot generate (matmul
// and linear's function and class are generated): gemm and Gemm, whose c may be omitted only
// when beta == 0; linear's packed weights (pack_linear_weight -> PackedLinearWeight,
// linear_packed, LinearPacked); and linear, which takes a PackedLinearWeight in place of the
// weight and otherwise is the generated function.
#include <memory>
#include <string>

#include "python/src/declared_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

// c as given, or allocated as op(a)·op(b) when omitted (only when beta == 0: c is read).
PyTensor gemm_output(py::handle c, const PyTensor& a, const PyTensor& b, bool ta, bool tb,
                     double beta) {
  if (!c.is_none()) return to_tensor(c, "gemm", "c", true);
  if (beta != 0.0) {
    throw_argument_error(ErrorKind::kInvalidArgument, "gemm", "c",
                         "a tensor when beta != 0 (c is read)", "None");
  }
  const Tensor views[] = {a.view, b.view, Tensor()};
  const double attributes[] = {1.0, beta, ta ? 1.0 : 0.0, tb ? 1.0 : 0.0};
  return allocate_output(ops::declared_op("gemm"), 6, views, attributes, a.frontend);
}

py::object gemm(py::handle a, py::handle b, double alpha, double beta, bool ta, bool tb,
                py::handle c, int index, py::handle stream) {
  Context ctx = make_context("gemm", index, stream);
  PyTensor x = to_tensor(a, "gemm", "a"), y = to_tensor(b, "gemm", "b");
  PyTensor o = gemm_output(c, x, y, ta, tb, beta);
  run_released([&] { ops::gemm(x.view, y.view, alpha, beta, ta, tb, o.view, ctx); });
  return result_of(c, o);
}

class Gemm {
 public:
  Gemm(py::handle a, py::handle b, double alpha, double beta, bool ta, bool tb, py::handle c,
       int index)
      : ta_(ta), tb_(tb), beta_(beta) {
    PyTensor x = to_tensor(a, "gemm", "a"), y = to_tensor(b, "gemm", "b");
    PyTensor o = gemm_output(c, x, y, ta, tb, 0.0);
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

// linear_packed's tensors {input, packed, bias, out}, out allocated from the packed [N, K].
struct LinearPackedArgs {
  PyTensor input, packed, bias, out;
};

LinearPackedArgs linear_packed_args(py::handle input, const PackedLinearWeight& packed,
                                    py::handle bias, py::handle out) {
  constexpr std::string_view kOp = "linear_packed";
  LinearPackedArgs args{to_tensor(input, kOp, "input"),
                        to_tensor(packed.data, kOp, "packed"),
                        bias.is_none() ? PyTensor{} : to_tensor(bias, kOp, "bias"),
                        {}};
  const Tensor& x = args.input.view;
  if (x.rank() < 1) {
    throw_argument_error(ErrorKind::kInvalidArgument, kOp, "input", "rank >= 1",
                         x.shape().to_string());
  }
  if (x.size(-1) != packed.k) {
    throw_argument_error(ErrorKind::kInvalidArgument, kOp, "input",
                         "last dim K = " + std::to_string(packed.k) + " of the packed weight",
                         x.shape().to_string());
  }
  Dims shape = x.shape();
  shape[shape.size() - 1] = packed.n;
  args.out = output(out, args.input.frontend, shape, x.dtype(), kOp, "out");
  return args;
}

py::object linear_packed(py::handle input, const PackedLinearWeight& packed, py::handle bias,
                         py::handle out, int index, py::handle stream) {
  Context ctx = make_context("linear_packed", index, stream);
  LinearPackedArgs v = linear_packed_args(input, packed, bias, out);
  run_released(
      [&] { ops::linear_packed(v.input.view, v.packed.view, v.bias.view, v.out.view, ctx); });
  return result_of(out, v.out);
}

class LinearPacked {
 public:
  LinearPacked(py::handle input, const PackedLinearWeight& packed, py::handle bias, py::handle out,
               int index) {
    LinearPackedArgs v = linear_packed_args(input, packed, bias, out);
    op_ = std::make_shared<ops::LinearPacked>(v.input.view, v.packed.view, v.bias.view, v.out.view,
                                              index);
  }
  py::object call(py::handle input, const PackedLinearWeight& packed, py::handle bias,
                  py::handle out, py::handle stream) const {
    Context ctx = make_context("linear_packed", 0, stream);
    LinearPackedArgs v = linear_packed_args(input, packed, bias, out);
    run_released([&] { (*op_)(v.input.view, v.packed.view, v.bias.view, v.out.view, ctx); });
    return result_of(out, v.out);
  }

 private:
  std::shared_ptr<const ops::LinearPacked> op_;
};

}  // namespace

void bind_gemm_ops(py::module_& m) {
  const py::object none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
  m.def("gemm", &gemm, "c = alpha * op(a) @ op(b) + beta * c (2-D or batched 3-D).", py::arg("a"),
        py::arg("b"), py::arg("alpha") = 1.0, py::arg("beta") = 0.0, py::arg("trans_a") = false,
        py::arg("trans_b") = false, py::arg("c") = none, py::kw_only(), index, stream);
  py::class_<PackedLinearWeight>(m, "PackedLinearWeight",
                                 "A linear weight in the packed layout of the decode kernels "
                                 "(from pack_linear_weight).")
      .def_readonly("data", &PackedLinearWeight::data, "The packed 1-D tensor.")
      .def_readonly("n", &PackedLinearWeight::n, "Rows N of the weight it packs.")
      .def_readonly("k", &PackedLinearWeight::k, "Columns K of the weight it packs.")
      .def("__repr__", [](const PackedLinearWeight& p) {
        return "PackedLinearWeight(n=" + std::to_string(p.n) + ", k=" + std::to_string(p.k) + ")";
      });
  // The generated linear, with a PackedLinearWeight in place of the weight meaning linear_packed.
  const py::object declared_linear = m.attr("linear");
  m.attr("linear") = py::cpp_function(
      [declared_linear](py::handle input, py::handle weight, py::handle bias, py::handle out,
                        int index, py::handle stream) -> py::object {
        if (py::isinstance<PackedLinearWeight>(weight)) {
          return linear_packed(input, weight.cast<const PackedLinearWeight&>(), bias, out, index,
                               stream);
        }
        return declared_linear(input, weight, bias, out, py::arg("implementation_index") = index,
                               py::arg("stream") = stream);
      },
      py::name("linear"), py::scope(m),
      "out = input @ weight.T + bias (weight [N, K], or its PackedLinearWeight).", py::arg("input"),
      py::arg("weight"), py::arg("bias") = none, py::arg("out") = none, py::kw_only(), index,
      stream);
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
  m.def(
      "linear_packing_pays",
      [](py::handle dtype) {
        return ops::linear_packing_pays(parse_dtype(dtype, "linear_packing_pays", "dtype"));
      },
      "Whether linear over pack_linear_weight's form is expected to beat linear over the [N, K] "
      "weight of dtype on this CPU (False for bfloat16 where AMX is on).",
      py::arg("dtype"));
  m.def("quantized_weight_bytes", &ops::quantized_weight_bytes,
        "Bytes of quantize_weight's output for an [n, k] weight with these attributes.",
        py::arg("n"), py::arg("k"), py::arg("bits") = 8, py::arg("group_size") = 0,
        py::arg("symmetric") = true);
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
  py::class_<LinearPacked>(m, "LinearPacked")
      .def(py::init<py::handle, const PackedLinearWeight&, py::handle, py::handle, int>(),
           py::arg("input"), py::arg("packed"), py::arg("bias") = none, py::arg("out") = none,
           py::kw_only(), index)
      .def("__call__", &LinearPacked::call, py::arg("input"), py::arg("packed"),
           py::arg("bias") = none, py::arg("out") = none, py::kw_only(), stream);
}

}  // namespace tileops::python
