// tileops._C.ops free functions the declarations cannot generate (cast, cat, add_rms_norm,
// scaled_mm; the
// others are tools/opgen's python_ops.cc) and the registry: arguments converted with the GIL
// held, the operator run with it released, omitted outputs allocated as the first input's kind.
#include <pybind11/stl.h>

#include <string>

#include "python/src/declared_bindings.h"
#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

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

// Omitted outputs are written in place (vLLM fused_add_rms_norm): out into input, residual_out
// into residual; both omitted is the in-place form. Returns (out, residual_out).
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
  return py::make_tuple(given_or(out, input), given_or(residual_out, residual));
}

// a and b may be uint8 storage of float8 codes (torch before 2.1 has no float8 dtypes), read as
// fp8_dtype; an omitted out is allocated as out_dtype.
py::object scaled_mm(py::handle a, py::handle b, py::handle scale_a, py::handle scale_b,
                     py::handle bias, py::handle out, py::handle out_dtype, py::handle fp8_dtype,
                     int index, py::handle stream) {
  constexpr const char* kOp = "scaled_mm";
  Context ctx = make_context(kOp, index, stream);
  PyTensor ta = to_tensor(a, kOp, "a");
  PyTensor tb = to_tensor(b, kOp, "b");
  if (fp8_dtype.is_none() && ta.view.dtype() == DataType::kUInt8) {
    throw_argument_error(ErrorKind::kInvalidType, kOp, "fp8_dtype",
                         "'float8_e4m3fn' or 'float8_e5m2' for a and b of uint8 storage", "None");
  }
  ta.view = reinterpret_as(ta.view, fp8_dtype, kOp, "a");
  tb.view = reinterpret_as(tb.view, fp8_dtype, kOp, "b");
  PyTensor sa = to_tensor(scale_a, kOp, "scale_a");
  PyTensor sb = to_tensor(scale_b, kOp, "scale_b");
  PyTensor tbias = bias.is_none() ? PyTensor{} : to_tensor(bias, kOp, "bias");
  PyTensor o;
  if (out.is_none()) {
    if (out_dtype.is_none()) {
      throw_argument_error(ErrorKind::kInvalidType, kOp, "out_dtype",
                           "float32, float16 or bfloat16 when out is omitted", "None");
    }
    const ops::DeclaredOp& op = ops::declared_op(kOp);
    const Tensor views[] = {ta.view, tb.view, sa.view, sb.view, tbias.view, Tensor()};
    o = allocate(ta.frontend, op.output_shape(5, views, {}),
                 parse_dtype(out_dtype, kOp, "out_dtype"), kOp, "out");
  } else {
    o = to_tensor(out, kOp, "out", true);
    if (!out_dtype.is_none() && parse_dtype(out_dtype, kOp, "out_dtype") != o.view.dtype()) {
      throw_argument_error(ErrorKind::kInvalidType, kOp, "out_dtype", "out's dtype",
                           std::string(name_of(parse_dtype(out_dtype, kOp, "out_dtype"))));
    }
  }
  run_released(
      [&] { ops::scaled_mm(ta.view, tb.view, sa.view, sb.view, tbias.view, o.view, ctx); });
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
  m.def("cast", &cast,
        "out = input converted to out's dtype (or `dtype`); `dtype`/`input_dtype` name 8-bit "
        "float formats stored as uint8.",
        py::arg("input"), py::arg("out") = none, py::kw_only(), py::arg("dtype") = none,
        py::arg("input_dtype") = none, index, stream);
  m.def("scaled_mm", &scaled_mm,
        "out = (scale_a * a) @ (scale_b * b) + bias, a and b float8 (vLLM's cutlass_scaled_mm); "
        "uint8 storage is read as `fp8_dtype`, an omitted out is allocated as `out_dtype`.",
        py::arg("a"), py::arg("b"), py::arg("scale_a"), py::arg("scale_b"), py::arg("bias") = none,
        py::arg("out") = none, py::kw_only(), py::arg("out_dtype") = none,
        py::arg("fp8_dtype") = none, index, stream);
  m.def("cat", &cat, "Concatenates tensors along dim.", py::arg("tensors"), py::arg("dim") = 0,
        py::arg("out") = none, py::kw_only(), index, stream);
  m.def("add_rms_norm", &add_rms_norm,
        "residual_out = input + residual; out = rms_norm(residual_out). Omitted outputs are "
        "written into input / residual. Returns (out, residual_out).",
        py::arg("input"), py::arg("residual"), py::arg("weight"), py::arg("eps") = 1e-6,
        py::arg("out") = none, py::arg("residual_out") = none, py::kw_only(), index, stream);
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
