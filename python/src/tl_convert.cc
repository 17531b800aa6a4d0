// Source locations from Python frames and conversions of Python arguments to tl operands.
#include <Python.h>
#include <frameobject.h>

#include <mutex>
#include <string>
#include <unordered_set>

#include "python/src/tensor_interop.h"
#include "python/src/tl_bindings.h"
#include "tileops/core/error.h"

namespace tileops::python {
namespace {

std::mutex g_names_mutex;
std::unordered_set<std::string>& interned() {
  static auto* names = new std::unordered_set<std::string>();  // never freed: Locs point in it
  return *names;
}
std::string& package_dir() {
  static auto* dir = new std::string();
  return *dir;
}

const char* intern(PyObject* unicode) {
  const char* text = unicode != nullptr ? PyUnicode_AsUTF8(unicode) : nullptr;
  if (text == nullptr) {
    PyErr_Clear();
    return "<unknown>";
  }
  const std::lock_guard<std::mutex> lock(g_names_mutex);
  return interned().emplace(text).first->c_str();
}

bool inside_package(const char* file) {
  const std::string& dir = package_dir();
  return !dir.empty() && std::string_view(file).starts_with(dir);
}

std::string type_name(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

// numpy.bool_ has __index__ (deprecated): without this check it would read as the int 0 or 1.
bool is_numpy_bool(py::handle obj) {
  const std::string_view name = Py_TYPE(obj.ptr())->tp_name;
  return name == "numpy.bool_" || name == "numpy.bool";
}

}  // namespace

bool is_bool(py::handle obj) { return PyBool_Check(obj.ptr()) || is_numpy_bool(obj); }

void set_package_dir(std::string_view dir) {
  const std::lock_guard<std::mutex> lock(g_names_mutex);
  package_dir() = std::string(dir);
}

tl::Loc caller_loc() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  tl::Loc loc{"<python>", 0, ""};
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* file = intern(code->co_filename);
    if (!inside_package(file)) {
      loc =
          tl::Loc{file, static_cast<unsigned>(PyFrame_GetLineNumber(frame)), intern(code->co_name)};
      Py_DECREF(code);
      Py_DECREF(frame);
      break;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return loc;
}

void fail_at(ErrorKind kind, const tl::Loc& loc, std::string_view construct,
             std::string_view message) {
  const tl::SourceLoc where{loc.file, loc.line, loc.function};
  throw Error(kind, "tl: " + where.to_string() + ": '" + std::string(construct) +
                        "': " + std::string(message));
}

tl::Operand to_operand(py::handle obj, const tl::Loc& loc, std::string_view construct,
                       std::string_view arg) {
  if (py::isinstance<tl::Value>(obj)) return tl::Operand(py::cast<const tl::Value&>(obj), loc);
  if (is_bool(obj)) return tl::Operand(truth_of(obj), loc);
  if (PyLong_Check(obj.ptr()) || (PyIndex_Check(obj.ptr()) && !PyFloat_Check(obj.ptr()))) {
    int overflow = 0;
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
    if (!index) throw py::error_already_set();
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0) {
      fail_at(ErrorKind::kInvalidArgument, loc, construct,
              std::string(arg) + " does not fit in int64: " + std::string(py::repr(obj)));
    }
    return tl::Operand(static_cast<std::int64_t>(v), loc);
  }
  if (PyFloat_Check(obj.ptr()) || py::hasattr(obj, "__float__")) {
    return tl::Operand(float_of(obj), loc);
  }
  fail_at(ErrorKind::kInvalidType, loc, construct,
          std::string(arg) + " must be a tl Value or a Python number, got " + type_name(obj));
}

tl::Value to_value(py::handle obj, const tl::Loc& loc, std::string_view construct,
                   std::string_view arg) {
  if (py::isinstance<tl::Value>(obj)) return py::cast<const tl::Value&>(obj);
  fail_at(ErrorKind::kInvalidType, loc, construct,
          std::string(arg) + " must be a tl Value (tile, scalar or tensor), got " + type_name(obj));
}

std::vector<tl::Operand> to_operands(py::handle obj, const tl::Loc& loc, std::string_view construct,
                                     std::string_view arg) {
  std::vector<tl::Operand> list;
  if (py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj)) {
    for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) {
      list.push_back(to_operand(item, loc, construct, arg));
    }
  } else {
    list.push_back(to_operand(obj, loc, construct, arg));
  }
  return list;
}

DataType to_dtype(py::handle obj, std::string_view construct, std::string_view arg) {
  if (py::isinstance<DataType>(obj)) return py::cast<DataType>(obj);
  return parse_dtype(obj, construct, arg);
}

std::vector<int> to_ints(py::handle obj, const tl::Loc& loc, std::string_view construct,
                         std::string_view arg) {
  std::vector<int> ints;
  if (obj.is_none()) return ints;
  auto one = [&](py::handle item) {
    if (!PyIndex_Check(item.ptr()) || is_bool(item)) {
      fail_at(ErrorKind::kInvalidType, loc, construct,
              std::string(arg) + " must be an int or a sequence of ints, got " + type_name(item));
    }
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0 || v < INT32_MIN || v > INT32_MAX) {  // a dim, not truncated to another
      fail_at(ErrorKind::kInvalidArgument, loc, construct,
              std::string(arg) + " out of range: " + std::string(py::repr(item)));
    }
    ints.push_back(static_cast<int>(v));
  };
  if (py::isinstance<py::sequence>(obj) && !py::isinstance<py::str>(obj)) {
    for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) one(item);
  } else {
    one(obj);
  }
  return ints;
}

int to_int(py::handle obj, const tl::Loc& loc, std::string_view construct, std::string_view arg) {
  if (py::isinstance<py::sequence>(obj) || obj.is_none()) {
    fail_at(ErrorKind::kInvalidType, loc, construct,
            std::string(arg) + " must be an int, got " + type_name(obj));
  }
  return to_ints(obj, loc, construct, arg).at(0);
}

py::object one_list(const py::args& items, py::handle keyword, std::string_view keyword_name,
                    const tl::Loc& loc, std::string_view construct) {
  if (!items.empty() && !keyword.is_none()) {
    fail_at(ErrorKind::kInvalidArgument, loc, construct,
            "give " + std::string(keyword_name) + " once: positionally or as " +
                std::string(keyword_name) + "=, not both");
  }
  if (!keyword.is_none()) return py::reinterpret_borrow<py::object>(keyword);
  if (items.size() == 1) return items[0];
  if (items.empty()) return py::none();
  return items;
}

std::vector<int> to_axes(const py::args& axes, py::handle keyword, std::string_view keyword_name,
                         const tl::Loc& loc, std::string_view construct) {
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (is_bool(axes[i])) {
      fail_at(ErrorKind::kInvalidType, loc, construct,
              "axis argument " + std::to_string(i + 1) + " must be an int, got bool " +
                  std::string(py::repr(axes[i])) +
                  "; keep_dims is keyword-only: write keep_dims=True");
    }
  }
  return to_ints(one_list(axes, keyword, keyword_name, loc, construct), loc, construct,
                 keyword_name);
}

double to_number(py::handle obj, const tl::Loc& loc, std::string_view construct,
                 std::string_view arg) {
  const double v = PyFloat_AsDouble(obj.ptr());  // uses __float__ (and __index__)
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    fail_at(ErrorKind::kInvalidType, loc, construct,
            std::string(arg) + " must be a number known when tracing (a Python float or a " +
                "ConstExpr), got " + std::string(py::str(py::type::of(obj).attr("__name__"))) +
                ": a runtime scalar cannot set it");
  }
  return v;
}

std::int64_t index_of(py::handle obj) {
  const long long v = PyLong_AsLongLong(obj.ptr());  // uses __index__
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

double float_of(py::handle obj) {
  const double v = PyFloat_AsDouble(obj.ptr());  // uses __float__
  if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

bool truth_of(py::handle obj) {
  const int v = PyObject_IsTrue(obj.ptr());
  if (v < 0) throw py::error_already_set();
  return v != 0;
}

}  // namespace tileops::python
