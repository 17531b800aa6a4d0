#include "python/src/errors.h"

#include <string>
#include <string_view>

#include "tileops/core/error.h"

namespace tileops::python {

namespace {

PyObject* g_trace_error = nullptr;       // owned for the life of the process
PyObject* g_trace_type_error = nullptr;  // (pybind's translators outlive any module object)

// A tileops::Error raised while tracing a tile-language kernel: the tl builder, verifier and
// bindings all start their messages with "tl: " (tl::trace_error, python::fail_at).
bool is_trace_error(const Error& e) {
  return std::string_view(e.what()).starts_with("tl: ") &&
         (e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kInvalidType);
}

PyObject* exception_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return PyExc_ValueError;
    case ErrorKind::kInvalidType:
      return PyExc_TypeError;
    case ErrorKind::kUnsupported:
      return PyExc_NotImplementedError;
    case ErrorKind::kOutOfMemory:
      return PyExc_MemoryError;
    default:
      return PyExc_RuntimeError;
  }
}

PyObject* exception_for(const Error& e) {
  if (is_trace_error(e)) {
    return e.kind() == ErrorKind::kInvalidType ? g_trace_type_error : g_trace_error;
  }
  return exception_for(e.kind());
}

// class `name`(base, RuntimeError) in module tileops._C.tl.
PyObject* new_trace_class(const char* name, PyObject* base, const char* doc) {
  const py::tuple bases = py::make_tuple(py::handle(base), py::handle(PyExc_RuntimeError));
  PyObject* type = PyErr_NewExceptionWithDoc(name, doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  return type;
}

}  // namespace

void register_errors(py::module_& m) {
  g_trace_error =
      new_trace_class("tileops._C.tl.TraceError", PyExc_ValueError,
                      "A kernel trace error (bad value, shape, construct); names file:line.");
  g_trace_type_error = new_trace_class("tileops._C.tl.TraceTypeError", PyExc_TypeError,
                                       "A kernel trace error about a type; names file:line.");
  // pybind11 wants a plain function pointer taking the exception_ptr by value.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(exception_for(e), e.what());
    }
  });
  m.attr("_error_kinds") = py::dict(py::arg("invalid_argument") = py::handle(PyExc_ValueError),
                                    py::arg("invalid_type") = py::handle(PyExc_TypeError),
                                    py::arg("unsupported") = py::handle(PyExc_NotImplementedError),
                                    py::arg("out_of_memory") = py::handle(PyExc_MemoryError),
                                    py::arg("internal") = py::handle(PyExc_RuntimeError));
}

void add_trace_errors(py::module_& tl) {
  tl.attr("TraceError") = py::handle(g_trace_error);
  tl.attr("TraceTypeError") = py::handle(g_trace_type_error);
}

std::int64_t int_arg(py::handle obj, std::string_view op, std::string_view arg) {
  if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr())) {
    throw_argument_error(ErrorKind::kInvalidType, op, arg, "an int",
                         std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  auto index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, arg, "an int within int64",
                         std::string(py::str(index)));
  }
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  return value;
}

double float_arg(py::handle obj, std::string_view op, std::string_view arg) {
  if (PyBool_Check(obj.ptr()) || !(PyFloat_Check(obj.ptr()) || PyIndex_Check(obj.ptr()))) {
    throw_argument_error(ErrorKind::kInvalidType, op, arg, "a real number",
                         std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  const double value = PyFloat_AsDouble(obj.ptr());
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();  // an int beyond the float range
    throw_argument_error(ErrorKind::kInvalidArgument, op, arg, "a value within float64 range",
                         std::string(py::str(obj)));
  }
  return value;
}

Context make_context(std::string_view op, int implementation_index, py::handle stream) {
  if (!stream.is_none()) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "stream", "None on the CPU",
                         std::string(py::repr(stream)));
  }
  Context ctx;
  ctx.implementation_index = implementation_index;
  return ctx;
}

}  // namespace tileops::python
