// tileops._C.ops class forms the declarations cannot generate (Cast, Cat, AddRmsNorm; the others
// are tools/opgen's python_ops.cc): the constructor takes the free function's arguments and
// specialises the operator once for that geometry (an omitted output is taken as contiguous);
// __call__ runs it on new data of that geometry.
#include <memory>

#include "python/src/declared_bindings.h"
#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

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
    PyTensor o = out.is_none() ? spec_.get(out, x.frontend, "cast", "out") : converted_out(out, x);
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
  OutputSpec spec_;
};

class Cat {
 public:
  Cat(py::handle tensors, int dim, py::handle out, int index) {
    TensorList list = to_tensor_list(tensors, "cat", "tensors");
    Dims shape = cat_shape("cat", list.views, dim);
    PyTensor o = output(out, list.owners[0].frontend, shape, list.views[0].dtype(), "cat", "out");
    spec_ = {o.view.shape(), o.view.dtype()};
    op_ = std::make_shared<ops::Cat>(list.views, dim, o.view, index);
  }
  py::object call(py::handle tensors, py::handle out, py::handle stream) const {
    Context ctx = make_context("cat", 0, stream);
    TensorList list = to_tensor_list(tensors, "cat", "tensors");
    PyTensor o = spec_.get(out, list.owners.empty() ? Frontend::kNumpy : list.owners[0].frontend,
                           "cat", "out");
    run_released([&] { (*op_)(list.views, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  std::shared_ptr<const ops::Cat> op_;
  OutputSpec spec_;
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
    return py::make_tuple(given_or(out, input), given_or(residual_out, residual));
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

}  // namespace

void bind_op_classes(py::module_& m) {
  auto none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
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
  py::class_<AddRmsNorm>(m, "AddRmsNorm")
      .def(py::init<py::handle, py::handle, py::handle, double, py::handle, py::handle, int>(),
           py::arg("input"), py::arg("residual"), py::arg("weight"), py::arg("eps") = 1e-6,
           py::arg("out") = none, py::arg("residual_out") = none, py::kw_only(), index)
      .def("__call__", &AddRmsNorm::call, py::arg("input"), py::arg("residual"), py::arg("weight"),
           py::arg("out") = none, py::arg("residual_out") = none, py::kw_only(), stream);
}

}  // namespace tileops::python
