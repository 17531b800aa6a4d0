// tileops._C.ops class forms (RmsNorm, Add, ...): the constructor takes the free function's
// arguments and specialises the operator once for that geometry (an omitted output is taken as
// contiguous); __call__ runs it on new data of that geometry.
#include <memory>
#include <optional>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

// The output geometry a class form allocates when __call__ omits out.
struct OutSpec {
  Dims shape;
  DataType dtype = DataType::kFloat32;

  PyTensor get(py::handle out, Frontend frontend, std::string_view op) const {
    return output(out, frontend, shape, dtype, op, "out");
  }
};

// An output for the constructor: the given one, or a contiguous stand-in for its geometry.
PyTensor ctor_output(py::handle out, Frontend frontend, const Dims& shape, DataType dtype,
                     std::string_view op, OutSpec& spec) {
  PyTensor o = output(out, frontend, shape, dtype, op, "out");
  spec = {o.view.shape(), o.view.dtype()};
  return o;
}

template <typename Op, const char* kOp, int kUnused = 0>
class Binary {
 public:
  Binary(py::handle input, py::handle other, py::handle out, int index) {
    PyTensor a = to_tensor(input, kOp, "input"), b = to_tensor(other, kOp, "other");
    PyTensor o = ctor_output(out, a.frontend, broadcast_shape(kOp, a.view, b.view), a.view.dtype(),
                             kOp, spec_);
    op_ = std::make_shared<Op>(a.view, b.view, o.view, index);
  }
  py::object call(py::handle input, py::handle other, py::handle out, py::handle stream) const {
    Context ctx = make_context(kOp, 0, stream);
    PyTensor a = to_tensor(input, kOp, "input"), b = to_tensor(other, kOp, "other");
    PyTensor o = spec_.get(out, a.frontend, kOp);
    run_released([&] { (*op_)(a.view, b.view, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  std::shared_ptr<const Op> op_;
  OutSpec spec_;
};

// Operators with one tensor input whose output has the input's shape and dtype, and whose
// attributes are fixed at construction.
template <typename Op, const char* kOp>
class Unary {
 public:
  template <typename... Attributes>
  Unary(py::handle input, py::handle out, int index, Attributes... attributes) {
    PyTensor x = to_tensor(input, kOp, "input");
    PyTensor o = ctor_output(out, x.frontend, x.view.shape(), x.view.dtype(), kOp, spec_);
    op_ = std::make_shared<Op>(x.view, attributes..., o.view, index);
  }
  py::object call(py::handle input, py::handle out, py::handle stream) const {
    Context ctx = make_context(kOp, 0, stream);
    PyTensor x = to_tensor(input, kOp, "input");
    PyTensor o = spec_.get(out, x.frontend, kOp);
    run_released([&] { (*op_)(x.view, o.view, ctx); });
    return result_of(out, o);
  }
  OutSpec& spec() { return spec_; }

 private:
  std::shared_ptr<const Op> op_;
  OutSpec spec_;
};

constexpr char kAdd[] = "add";
constexpr char kMul[] = "mul";
constexpr char kSwiglu[] = "swiglu";
constexpr char kCausal[] = "causal_softmax";
constexpr char kScaled[] = "scaled_softmax";

class Cast {
 public:
  Cast(py::handle input, py::handle out, py::handle dtype, py::handle input_dtype, int index)
      : input_dtype_(py::reinterpret_borrow<py::object>(input_dtype)),
        dtype_(py::reinterpret_borrow<py::object>(dtype)) {
    PyTensor x = to_tensor(input, "cast", "input");
    x.view = reinterpret_as(x.view, input_dtype, "cast", "input_dtype");
    PyTensor o = converted_out(out, x);
    spec_ = {o.view.shape(), o.view.dtype()};
    op_ = std::make_shared<ops::Cast>(x.view, o.view, index);
  }
  py::object call(py::handle input, py::handle out, py::handle stream) const {
    Context ctx = make_context("cast", 0, stream);
    PyTensor x = to_tensor(input, "cast", "input");
    x.view = reinterpret_as(x.view, input_dtype_, "cast", "input_dtype");
    PyTensor o = out.is_none() ? spec_.get(out, x.frontend, "cast") : converted_out(out, x);
    run_released([&] { (*op_)(x.view, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  PyTensor converted_out(py::handle out, const PyTensor& x) const {
    if (out.is_none()) {
      if (dtype_.is_none()) {
        throw_argument_error(ErrorKind::kInvalidType, "cast", "dtype",
                             "a target dtype when out is omitted", "None");
      }
      return allocate(x.frontend, x.view.shape(), parse_dtype(dtype_, "cast", "dtype"), "cast",
                      "out");
    }
    PyTensor o = to_tensor(out, "cast", "out", true);
    o.view = reinterpret_as(o.view, dtype_, "cast", "dtype");
    return o;
  }

  py::object input_dtype_, dtype_;
  std::shared_ptr<const ops::Cast> op_;
  OutSpec spec_;
};

class Cat {
 public:
  Cat(py::handle tensors, int dim, py::handle out, int index) {
    TensorList list = to_tensor_list(tensors, "cat", "tensors");
    Dims shape = cat_shape("cat", list.views, dim);
    PyTensor o =
        ctor_output(out, list.owners[0].frontend, shape, list.views[0].dtype(), "cat", spec_);
    op_ = std::make_shared<ops::Cat>(list.views, dim, o.view, index);
  }
  py::object call(py::handle tensors, py::handle out, py::handle stream) const {
    Context ctx = make_context("cat", 0, stream);
    TensorList list = to_tensor_list(tensors, "cat", "tensors");
    PyTensor o =
        spec_.get(out, list.owners.empty() ? Frontend::kNumpy : list.owners[0].frontend, "cat");
    run_released([&] { (*op_)(list.views, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  std::shared_ptr<const ops::Cat> op_;
  OutSpec spec_;
};

class Embedding {
 public:
  Embedding(py::handle input_ids, py::handle weight, py::handle out, int index) {
    PyTensor ids = to_tensor(input_ids, "embedding", "input_ids");
    PyTensor w = to_tensor(weight, "embedding", "weight");
    PyTensor o = ctor_output(out, ids.frontend, embedding_shape("embedding", ids.view, w.view),
                             w.view.dtype(), "embedding", spec_);
    op_ = std::make_shared<ops::Embedding>(ids.view, w.view, o.view, index);
  }
  py::object call(py::handle input_ids, py::handle weight, py::handle out,
                  py::handle stream) const {
    Context ctx = make_context("embedding", 0, stream);
    PyTensor ids = to_tensor(input_ids, "embedding", "input_ids");
    PyTensor w = to_tensor(weight, "embedding", "weight");
    PyTensor o = spec_.get(out, ids.frontend, "embedding");
    run_released([&] { (*op_)(ids.view, w.view, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  std::shared_ptr<const ops::Embedding> op_;
  OutSpec spec_;
};

// Omitted outputs mean in place, at construction and at each call.
class AddRmsNorm {
 public:
  AddRmsNorm(py::handle input, py::handle residual, py::handle weight, double eps, py::handle out,
             py::handle residual_out, int index) {
    Views v = views(input, residual, weight, out, residual_out);
    op_ = std::make_shared<ops::AddRmsNorm>(v.x.view, v.r.view, v.w.view, eps, v.o.view, v.ro.view,
                                            index);
  }
  py::tuple call(py::handle input, py::handle residual, py::handle weight, py::handle out,
                 py::handle residual_out, py::handle stream) const {
    Context ctx = make_context("add_rms_norm", 0, stream);
    Views v = views(input, residual, weight, out, residual_out);
    run_released([&] { (*op_)(v.x.view, v.r.view, v.w.view, v.o.view, v.ro.view, ctx); });
    return py::make_tuple(
        py::reinterpret_borrow<py::object>(out.is_none() ? input : out),
        py::reinterpret_borrow<py::object>(residual_out.is_none() ? residual : residual_out));
  }

 private:
  struct Views {
    PyTensor x, r, w, o, ro;
  };
  static Views views(py::handle input, py::handle residual, py::handle weight, py::handle out,
                     py::handle residual_out) {
    constexpr const char* kOp = "add_rms_norm";
    Views v;
    v.x = to_tensor(input, kOp, "input", out.is_none());
    v.r = to_tensor(residual, kOp, "residual", residual_out.is_none());
    v.w = to_tensor(weight, kOp, "weight");
    v.o = out.is_none() ? v.x : to_tensor(out, kOp, "out", true);
    v.ro = residual_out.is_none() ? v.r : to_tensor(residual_out, kOp, "residual_out", true);
    return v;
  }

  std::shared_ptr<const ops::AddRmsNorm> op_;
};

class SiluAndMul {
 public:
  SiluAndMul(py::handle input, int dim, py::handle out, int index) {
    PyTensor x = to_tensor(input, "silu_and_mul", "input");
    PyTensor o = ctor_output(out, x.frontend, silu_and_mul_shape("silu_and_mul", x.view, dim),
                             x.view.dtype(), "silu_and_mul", spec_);
    op_ = std::make_shared<ops::SiluAndMul>(x.view, dim, o.view, index);
  }
  py::object call(py::handle input, py::handle out, py::handle stream) const {
    Context ctx = make_context("silu_and_mul", 0, stream);
    PyTensor x = to_tensor(input, "silu_and_mul", "input");
    PyTensor o = spec_.get(out, x.frontend, "silu_and_mul");
    run_released([&] { (*op_)(x.view, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  std::shared_ptr<const ops::SiluAndMul> op_;
  OutSpec spec_;
};

template <typename T>
py::class_<T> binary_class(py::module_& m, const char* name, const char* other) {
  auto none = py::none();
  return std::move(py::class_<T>(m, name)
                       .def(py::init<py::handle, py::handle, py::handle, int>(), py::arg("input"),
                            py::arg(other), py::arg("out") = none, py::kw_only(),
                            py::arg("implementation_index") = 0)
                       .def("__call__", &T::call, py::arg("input"), py::arg(other),
                            py::arg("out") = none, py::kw_only(), py::arg("stream") = none));
}

}  // namespace

void bind_op_classes(py::module_& m) {
  auto none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
  binary_class<Binary<ops::Add, kAdd>>(m, "Add", "other");
  binary_class<Binary<ops::Mul, kMul>>(m, "Mul", "other");
  binary_class<Binary<ops::Swiglu, kSwiglu>>(m, "Swiglu", "gate");
  py::class_<Cast>(m, "Cast")
      .def(py::init<py::handle, py::handle, py::handle, py::handle, int>(), py::arg("input"),
           py::arg("out") = none, py::kw_only(), py::arg("dtype") = none,
           py::arg("input_dtype") = none, index)
      .def("__call__", &Cast::call, py::arg("input"), py::arg("out") = none, py::kw_only(), stream);
  py::class_<Cat>(m, "Cat")
      .def(py::init<py::handle, int, py::handle, int>(), py::arg("tensors"), py::arg("dim") = 0,
           py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &Cat::call, py::arg("tensors"), py::arg("out") = none, py::kw_only(),
           stream);
  py::class_<Embedding>(m, "Embedding")
      .def(py::init<py::handle, py::handle, py::handle, int>(), py::arg("input_ids"),
           py::arg("weight"), py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &Embedding::call, py::arg("input_ids"), py::arg("weight"),
           py::arg("out") = none, py::kw_only(), stream);
  py::class_<AddRmsNorm>(m, "AddRmsNorm")
      .def(py::init<py::handle, py::handle, py::handle, double, py::handle, py::handle, int>(),
           py::arg("input"), py::arg("residual"), py::arg("weight"), py::arg("eps") = 1e-6,
           py::arg("out") = none, py::arg("residual_out") = none, py::kw_only(), index)
      .def("__call__", &AddRmsNorm::call, py::arg("input"), py::arg("residual"), py::arg("weight"),
           py::arg("out") = none, py::arg("residual_out") = none, py::kw_only(), stream);
  py::class_<SiluAndMul>(m, "SiluAndMul")
      .def(py::init<py::handle, int, py::handle, int>(), py::arg("input"), py::arg("dim") = -1,
           py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &SiluAndMul::call, py::arg("input"), py::arg("out") = none, py::kw_only(),
           stream);
  using Causal = Unary<ops::CausalSoftmax, kCausal>;
  py::class_<Causal>(m, "CausalSoftmax")
      .def(py::init([](py::handle input, py::handle out, int i) { return Causal(input, out, i); }),
           py::arg("input"), py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &Causal::call, py::arg("input"), py::arg("out") = none, py::kw_only(),
           stream);
  using Scaled = Unary<ops::ScaledSoftmax, kScaled>;
  py::class_<Scaled>(m, "ScaledSoftmax")
      .def(py::init([](py::handle input, double scale, py::handle out, int i) {
             return Scaled(input, out, i, scale);
           }),
           py::arg("input"), py::arg("scale"), py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &Scaled::call, py::arg("input"), py::arg("out") = none, py::kw_only(),
           stream);
}

}  // namespace tileops::python
