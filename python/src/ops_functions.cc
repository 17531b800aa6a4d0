// tileops._C.ops free functions: arguments converted with the GIL held, the operator run with
// it released, omitted outputs allocated as the first input's kind and returned.
#include <pybind11/stl.h>

#include <string>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

using BinaryFn = void (*)(const Tensor&, const Tensor&, const Tensor&, const Context&);

template <const char* kOp, BinaryFn kFn>
py::object broadcast_binary(py::handle input, py::handle other, py::handle out, int index,
                            py::handle stream) {
  Context ctx = make_context(kOp, index, stream);
  PyTensor a = to_tensor(input, kOp, "input");
  PyTensor b = to_tensor(other, kOp, "other");
  PyTensor o = out.is_none() ? allocate(a.frontend, broadcast_shape(kOp, a.view, b.view),
                                        a.view.dtype(), kOp, "out")
                             : to_tensor(out, kOp, "out", true);
  run_released([&] { kFn(a.view, b.view, o.view, ctx); });
  return result_of(out, o);
}

constexpr char kAdd[] = "add";
constexpr char kMul[] = "mul";
constexpr char kSwiglu[] = "swiglu";

void add_fn(const Tensor& a, const Tensor& b, const Tensor& o, const Context& ctx) {
  ops::add(a, b, o, ctx);
}
void mul_fn(const Tensor& a, const Tensor& b, const Tensor& o, const Context& ctx) {
  ops::mul(a, b, o, ctx);
}
void swiglu_fn(const Tensor& a, const Tensor& b, const Tensor& o, const Context& ctx) {
  ops::swiglu(a, b, o, ctx);
}

py::object cast(py::handle input, py::handle out, py::handle dtype, py::handle input_dtype,
                int index, py::handle stream) {
  constexpr const char* kOp = "cast";
  Context ctx = make_context(kOp, index, stream);
  PyTensor x = to_tensor(input, kOp, "input");
  x.view = reinterpret_as(x.view, input_dtype, kOp, "input_dtype");
  PyTensor o;
  if (out.is_none()) {
    if (dtype.is_none()) {
      throw_argument_error(ErrorKind::kInvalidType, kOp, "dtype",
                           "a target dtype when out is omitted", "None");
    }
    o = allocate(x.frontend, x.view.shape(), parse_dtype(dtype, kOp, "dtype"), kOp, "out");
  } else {
    o = to_tensor(out, kOp, "out", true);
    o.view = reinterpret_as(o.view, dtype, kOp, "dtype");
  }
  run_released([&] { ops::cast(x.view, o.view, ctx); });
  return result_of(out, o);
}

py::object cat(py::handle tensors, int dim, py::handle out, int index, py::handle stream) {
  constexpr const char* kOp = "cat";
  Context ctx = make_context(kOp, index, stream);
  TensorList list = to_tensor_list(tensors, kOp, "tensors");
  PyTensor o;
  if (out.is_none()) {
    Dims shape = cat_shape(kOp, list.views, dim);  // throws for an empty list
    o = allocate(list.owners[0].frontend, shape, list.views[0].dtype(), kOp, "out");
  } else {
    o = to_tensor(out, kOp, "out", true);
  }
  run_released([&] { ops::cat(list.views, dim, o.view, ctx); });
  return result_of(out, o);
}

py::object embedding(py::handle input_ids, py::handle weight, py::handle out, int index,
                     py::handle stream) {
  constexpr const char* kOp = "embedding";
  Context ctx = make_context(kOp, index, stream);
  PyTensor ids = to_tensor(input_ids, kOp, "input_ids");
  PyTensor w = to_tensor(weight, kOp, "weight");
  PyTensor o = out.is_none() ? allocate(ids.frontend, embedding_shape(kOp, ids.view, w.view),
                                        w.view.dtype(), kOp, "out")
                             : to_tensor(out, kOp, "out", true);
  run_released([&] { ops::embedding(ids.view, w.view, o.view, ctx); });
  return result_of(out, o);
}

// Omitted outputs are written in place (vLLM fused_add_rms_norm): out into input, residual_out
// into residual. Returns (out, residual_out).
py::tuple add_rms_norm(py::handle input, py::handle residual, py::handle weight, double eps,
                       py::handle out, py::handle residual_out, int index, py::handle stream) {
  constexpr const char* kOp = "add_rms_norm";
  Context ctx = make_context(kOp, index, stream);
  PyTensor x = to_tensor(input, kOp, "input", out.is_none());
  PyTensor r = to_tensor(residual, kOp, "residual", residual_out.is_none());
  PyTensor w = to_tensor(weight, kOp, "weight");
  PyTensor o = out.is_none() ? x : to_tensor(out, kOp, "out", true);
  PyTensor ro = residual_out.is_none() ? r : to_tensor(residual_out, kOp, "residual_out", true);
  if (out.is_none() && residual_out.is_none()) {
    run_released([&] { ops::add_rms_norm_inplace(x.view, r.view, w.view, eps, ctx); });
  } else {
    run_released([&] { ops::add_rms_norm(x.view, r.view, w.view, eps, o.view, ro.view, ctx); });
  }
  return py::make_tuple(out.is_none() ? py::reinterpret_borrow<py::object>(input)
                                      : py::reinterpret_borrow<py::object>(out),
                        residual_out.is_none() ? py::reinterpret_borrow<py::object>(residual)
                                               : py::reinterpret_borrow<py::object>(residual_out));
}

py::object silu_and_mul(py::handle input, int dim, py::handle out, int index, py::handle stream) {
  constexpr const char* kOp = "silu_and_mul";
  Context ctx = make_context(kOp, index, stream);
  PyTensor x = to_tensor(input, kOp, "input");
  PyTensor o = out.is_none() ? allocate(x.frontend, silu_and_mul_shape(kOp, x.view, dim),
                                        x.view.dtype(), kOp, "out")
                             : to_tensor(out, kOp, "out", true);
  run_released([&] { ops::silu_and_mul(x.view, dim, o.view, ctx); });
  return result_of(out, o);
}

py::object causal_softmax(py::handle input, py::handle out, int index, py::handle stream) {
  constexpr const char* kOp = "causal_softmax";
  Context ctx = make_context(kOp, index, stream);
  PyTensor x = to_tensor(input, kOp, "input");
  PyTensor o = output(out, x.frontend, x.view.shape(), x.view.dtype(), kOp, "out");
  run_released([&] { ops::causal_softmax(x.view, o.view, ctx); });
  return result_of(out, o);
}

py::object scaled_softmax(py::handle input, double scale, py::handle out, int index,
                          py::handle stream) {
  constexpr const char* kOp = "scaled_softmax";
  Context ctx = make_context(kOp, index, stream);
  PyTensor x = to_tensor(input, kOp, "input");
  PyTensor o = output(out, x.frontend, x.view.shape(), x.view.dtype(), kOp, "out");
  run_released([&] { ops::scaled_softmax(x.view, scale, o.view, ctx); });
  return result_of(out, o);
}

DeviceType device_type(const std::string& device) {
  if (device == "cpu") return DeviceType::kCpu;
  if (device == "cuda") return DeviceType::kCuda;
  throw_argument_error(ErrorKind::kInvalidArgument, "active_implementation_indices", "device",
                       "'cpu' or 'cuda'", "'" + device + "'");
}

}  // namespace

void bind_op_functions(py::module_& m) {
  auto none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
  m.def("add", &broadcast_binary<kAdd, add_fn>, "out = input + other (NumPy broadcasting).",
        py::arg("input"), py::arg("other"), py::arg("out") = none, py::kw_only(), index, stream);
  m.def("mul", &broadcast_binary<kMul, mul_fn>, "out = input * other (NumPy broadcasting).",
        py::arg("input"), py::arg("other"), py::arg("out") = none, py::kw_only(), index, stream);
  m.def("swiglu", &broadcast_binary<kSwiglu, swiglu_fn>, "out = input * silu(gate).",
        py::arg("input"), py::arg("gate"), py::arg("out") = none, py::kw_only(), index, stream);
  m.def("cast", &cast,
        "out = input converted to out's dtype (or `dtype`); `dtype`/`input_dtype` name 8-bit "
        "float formats stored as uint8.",
        py::arg("input"), py::arg("out") = none, py::kw_only(), py::arg("dtype") = none,
        py::arg("input_dtype") = none, index, stream);
  m.def("cat", &cat, "Concatenates tensors along dim.", py::arg("tensors"), py::arg("dim") = 0,
        py::arg("out") = none, py::kw_only(), index, stream);
  m.def("embedding", &embedding, "out[i..., :] = weight[input_ids[i...], :].", py::arg("input_ids"),
        py::arg("weight"), py::arg("out") = none, py::kw_only(), index, stream);
  m.def("add_rms_norm", &add_rms_norm,
        "residual_out = input + residual; out = rms_norm(residual_out). Omitted outputs are "
        "written into input / residual. Returns (out, residual_out).",
        py::arg("input"), py::arg("residual"), py::arg("weight"), py::arg("eps") = 1e-6,
        py::arg("out") = none, py::arg("residual_out") = none, py::kw_only(), index, stream);
  m.def("silu_and_mul", &silu_and_mul, "out = silu(x[..., :d]) * x[..., d:] along dim.",
        py::arg("input"), py::arg("dim") = -1, py::arg("out") = none, py::kw_only(), index, stream);
  m.def("causal_softmax", &causal_softmax, "Softmax over the last dim with a causal mask.",
        py::arg("input"), py::arg("out") = none, py::kw_only(), index, stream);
  m.def("scaled_softmax", &scaled_softmax, "out = softmax(scale * input) over the last dim.",
        py::arg("input"), py::arg("scale"), py::arg("out") = none, py::kw_only(), index, stream);
  m.def(
      "active_implementation_indices",
      [](const std::string& op, const std::string& device) {
        return ops::active_implementation_indices(op, device_type(device));
      },
      "Implementation indices of `op` on `device`, ascending.", py::arg("op"),
      py::arg("device") = "cpu");
  m.def(
      "active_implementation_names",
      [](const std::string& op, const std::string& device) {
        return ops::active_implementation_names(op, device_type(device));
      },
      "Implementation names of `op` on `device`, by index.", py::arg("op"),
      py::arg("device") = "cpu");
  m.def("registered_operators", &ops::registered_operators,
        "Every operator with an implementation.");
  m.def("clear_cache", &ops::clear_cache, "Empties the operator-instance cache.");
  m.def("cache_size", &ops::cache_size, "Operator instances in the cache.");
}

}  // namespace tileops::python
