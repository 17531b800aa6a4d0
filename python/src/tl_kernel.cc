// tl kernels for Python: a tl::Kernel whose body calls back into the Python function, launched
// with numpy arrays, torch tensors or DLPack objects by pointer (no copies) and the GIL released
// while blocks run (the trace itself reacquires it to run the Python body).
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "python/src/errors.h"
#include "python/src/tensor_interop.h"
#include "python/src/tl_bindings.h"
#include "tileops/core/error.h"

namespace tileops::python {
namespace {

struct ParamSpec {
  std::string name;
  tl::ParamKind kind = tl::ParamKind::kInt;
  bool constexpr_param = false;
};

ParamSpec parse_param(const py::handle& item) {
  const auto pair = py::cast<std::pair<std::string, std::string>>(item);
  ParamSpec p{pair.first};
  if (pair.second == "ptr") {
    p.kind = tl::ParamKind::kGlobalAddress;
  } else if (pair.second == "int") {
    p.kind = tl::ParamKind::kInt;
  } else if (pair.second == "float") {
    p.kind = tl::ParamKind::kFloat;
  } else if (pair.second == "bool") {
    p.kind = tl::ParamKind::kBool;
  } else if (pair.second == "constexpr") {
    p.constexpr_param = true;
  } else {
    throw_argument_error(ErrorKind::kInvalidArgument, "tl.jit", "parameter " + p.name,
                         "ptr, int, float, bool or constexpr", pair.second);
  }
  return p;
}

// A numpy scalar (or 0-d array): a dtype and no dimensions.
bool is_numpy_scalar(py::handle obj) {
  return py::hasattr(obj, "dtype") && py::hasattr(obj, "ndim") && obj.attr("ndim").cast<int>() == 0;
}

bool is_numpy_bool(py::handle obj) {
  return is_numpy_scalar(obj) && py::str(obj.attr("dtype")).cast<std::string>() == "bool";
}

tl::Options parse_options(const py::dict& options) {
  tl::Options parsed;
  for (auto [key, value] : options) {
    const std::string name = py::str(key);
    // numpy bools and integers count as the Python values they hold.
    if (PyBool_Check(value.ptr()) || is_numpy_bool(value)) {
      parsed.set(name, truth_of(value));
    } else if (PyLong_Check(value.ptr()) ||
               (PyIndex_Check(value.ptr()) && is_numpy_scalar(value))) {
      parsed.set(name, int_arg(value, "tl.jit", "option " + name));
    } else if (py::isinstance<py::str>(value)) {
      parsed.set(name, value.cast<std::string>());
    } else if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      std::vector<std::string> items;
      for (py::handle item : value) {
        if (!py::isinstance<py::str>(item)) {
          throw_argument_error(ErrorKind::kInvalidType, "tl.jit", "option " + name,
                               "a list of strings", std::string(py::repr(value)));
        }
        items.push_back(item.cast<std::string>());
      }
      parsed.set(name, items);
    } else {
      parsed.set(name, std::string(py::repr(value)));  // rejected with the option's name
    }
  }
  return parsed;
}

std::string as_text(py::handle obj) { return py::str(obj); }

// A runtime scalar by its Python type; the kernel checks it against the parameter's kind.
tl::Argument scalar_argument(py::handle obj, const std::string& kernel, const std::string& arg) {
  if (PyBool_Check(obj.ptr())) return obj.ptr() == Py_True;
  if (py::hasattr(obj, "dtype") && py::str(obj.attr("dtype")).cast<std::string>() == "bool") {
    return truth_of(obj);  // numpy.bool_
  }
  if (PyIndex_Check(obj.ptr())) {
    try {
      return index_of(obj);
    } catch (const py::error_already_set&) {  // OverflowError: beyond int64
      throw_argument_error(ErrorKind::kInvalidArgument, kernel, arg, "an int64",
                           std::string(py::repr(obj)));
    }
  }
  if (PyFloat_Check(obj.ptr()) || py::hasattr(obj, "__float__")) {
    return float_of(obj);
  }
  throw_argument_error(ErrorKind::kInvalidType, kernel, arg, "a Python number",
                       std::string("an object of type ") + Py_TYPE(obj.ptr())->tp_name);
}

// ConstExprs arrive as their exact key text (tileops/tl.py, _key): the body reads the Python
// values themselves. Other forms are still taken, for callers of the engine's own Kernel.
tl::Argument constexpr_argument(py::handle obj, const std::string& kernel, const std::string& arg) {
  if (PyBool_Check(obj.ptr())) return obj.ptr() == Py_True;
  if (PyLong_Check(obj.ptr())) return int_arg(obj, kernel, arg);
  if (PyFloat_Check(obj.ptr())) return obj.cast<double>();
  if (py::isinstance<py::str>(obj)) return obj.cast<std::string>();
  if (py::isinstance<py::tuple>(obj)) {
    std::vector<std::int64_t> values;
    for (py::handle item : obj) values.push_back(int_arg(item, kernel, arg));
    return values;
  }
  throw_argument_error(ErrorKind::kInvalidType, kernel, arg,
                       "a bool, int, float, str or tuple of ints", std::string(py::repr(obj)));
}

class PyKernel {
 public:
  PyKernel(const std::string& name, const py::list& params, const py::object& body,
           const py::dict& options)
      : name_(name) {
    std::vector<tl::detail::TraceParam> trace_params;
    for (py::handle item : params) {
      params_.push_back(parse_param(item));
      trace_params.push_back({params_.back().kind, params_.back().constexpr_param});
    }
    auto fn = std::make_shared<py::object>(body);
    const std::vector<ParamSpec> specs = params_;
    kernel_ = std::make_unique<tl::Kernel>(
        name, std::move(trace_params),
        [fn, specs](std::span<const tl::Value> values, std::span<const tl::Argument>) {
          const py::gil_scoped_acquire gil;
          py::list list;
          for (std::size_t i = 0; i < specs.size(); ++i) {
            list.append(specs[i].constexpr_param ? py::none() : py::cast(values[i]));
          }
          const std::size_t open = open_ranges();
          try {
            (*fn)(list);
          } catch (...) {
            abandon_ranges(open);
            throw;
          }
          abandon_ranges(open);  // a range iterator kept past `break`: reported by the trace
        },
        parse_options(options));
  }

  void launch(std::int64_t core_num, const py::sequence& args) const {
    std::vector<PyTensor> keep;
    const std::vector<tl::Argument> converted = convert(args, keep);
    const py::gil_scoped_release release;
    kernel_->launch_arguments(core_num, converted);
  }

  std::string ir(const py::sequence& args) const {
    std::vector<PyTensor> keep;
    const std::vector<tl::Argument> converted = convert(args, keep);
    const py::gil_scoped_release release;
    return kernel_->ir(converted);
  }

  std::size_t num_specialisations() const { return kernel_->num_specialisations(); }

 private:
  std::vector<tl::Argument> convert(const py::sequence& args, std::vector<PyTensor>& keep) const {
    if (args.size() != params_.size()) {
      throw_argument_error(ErrorKind::kInvalidArgument, name_, "arguments",
                           std::to_string(params_.size()) + " arguments",
                           std::to_string(args.size()));
    }
    std::vector<tl::Argument> converted;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const ParamSpec& p = params_[i];
      const std::string& arg = p.name;
      const py::handle obj = args[i];
      if (p.constexpr_param) {
        converted.push_back(constexpr_argument(obj, name_, arg));
      } else if (p.kind == tl::ParamKind::kGlobalAddress) {
        // Writable: a kernel may store through any GlobalAddress, and read-only memory must
        // never be written (copying it instead would break "no copies").
        if (py::hasattr(obj, "_tl_storage")) {  // tl.reinterpret(storage, dtype)
          keep.push_back(to_tensor(obj.attr("_tl_storage"), name_, arg, /*writable=*/true));
          keep.back().view =
              with_dtype(keep.back().view, to_dtype(obj.attr("_tl_dtype"), name_, arg), name_, arg);
        } else {
          keep.push_back(to_tensor(obj, name_, arg, /*writable=*/true));
        }
        const tl::Pointer pointer{keep.back().view.data(), keep.back().view.dtype()};
        converted.emplace_back(std::in_place_type<tl::Pointer>, pointer);
      } else {
        converted.push_back(scalar_argument(obj, name_, arg));
        // The kernel checks the kind too, but knows arguments by position only.
        const tl::Argument& a = converted.back();
        const bool ok = p.kind == tl::ParamKind::kBool    ? std::holds_alternative<bool>(a)
                        : p.kind == tl::ParamKind::kInt   ? std::holds_alternative<std::int64_t>(a)
                        : p.kind == tl::ParamKind::kFloat ? !std::holds_alternative<bool>(a)
                                                          : true;
        if (!ok) {
          throw_argument_error(ErrorKind::kInvalidType, name_, arg,
                               p.kind == tl::ParamKind::kBool  ? "a bool"
                               : p.kind == tl::ParamKind::kInt ? "an int"
                                                               : "a float",
                               std::holds_alternative<bool>(a)           ? "bool " + as_text(obj)
                               : std::holds_alternative<std::int64_t>(a) ? "int " + as_text(obj)
                                                                         : "float " + as_text(obj));
        }
      }
    }
    return converted;
  }

  std::string name_;
  std::vector<ParamSpec> params_;
  std::unique_ptr<tl::Kernel> kernel_;
};

}  // namespace

void bind_tl_kernel(py::module_& tl) {
  py::class_<PyKernel>(tl, "Kernel",
                       "The engine of @tileops.tl.jit: a traced kernel with its specialisation "
                       "cache. params: [(name, 'ptr'|'int'|'float'|'bool'|'constexpr')]; "
                       "body(values) traces the Python function.")
      .def(py::init<const std::string&, const py::list&, const py::object&, const py::dict&>(),
           py::arg("name"), py::arg("params"), py::arg("body"), py::arg("options"))
      .def("launch", &PyKernel::launch, py::arg("core_num"), py::arg("args"))
      .def("ir", &PyKernel::ir, py::arg("args"))
      .def_property_readonly("num_specialisations", &PyKernel::num_specialisations);
  tl.def("_set_package_dir", &set_package_dir, py::arg("dir"));
  tl.def("_caller_location", [] {
    const tl::Loc loc = caller_loc();
    return py::make_tuple(loc.file, loc.line, loc.function);
  });
}

}  // namespace tileops::python
