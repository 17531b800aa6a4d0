#include "python/src/tensor_interop.h"

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>

#include <array>
#include <cstdint>
#include <string>

#include "python/src/dlpack_import.h"
#include "python/src/torch_facts.h"
#include "tileops/core/error.h"

namespace tileops::python {
namespace {

constexpr std::array<DataType, 10> kTorchTypes = {
    DataType::kBool,    DataType::kInt8,   DataType::kInt16,   DataType::kInt32,
    DataType::kInt64,   DataType::kUInt8,  DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat32, DataType::kFloat64};

// torch.Tensor and the torch.dtype singletons, looked up once torch has been imported by the
// caller (tileops never imports torch itself).
struct TorchApi {
  PyObject* tensor_type = nullptr;
  std::array<PyObject*, kTorchTypes.size()> dtypes{};
  PyObject* empty = nullptr;
  PyObject* uint8 = nullptr;
  TorchFactsReader reader = nullptr;  // from tileops._torch_view when it was built
};

TorchFactsReader load_facts_reader() {
  PyObject* module = PyImport_ImportModule("tileops._torch_view");
  if (module == nullptr) {
    PyErr_Clear();  // not built (no torch headers): the Python path is used
    return nullptr;
  }
  auto owner = py::reinterpret_steal<py::object>(module);
  py::object capsule = owner.attr("reader");
  if (capsule.is_none()) return nullptr;  // built for another torch version
  return reinterpret_cast<TorchFactsReader>(
      PyCapsule_GetPointer(capsule.ptr(), kTorchFactsCapsule));
}

const TorchApi* torch_api() {
  static TorchApi api;
  if (api.tensor_type != nullptr) return &api;
  PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");
  if (torch == nullptr) return nullptr;
  py::handle module(torch);
  if (!py::hasattr(module, "Tensor") || !py::hasattr(module, "empty")) return nullptr;
  for (std::size_t i = 0; i < kTorchTypes.size(); ++i) {
    api.dtypes[i] =
        py::object(module.attr(std::string(name_of(kTorchTypes[i])).c_str())).release().ptr();
  }
  api.uint8 = py::object(module.attr("uint8")).release().ptr();
  api.empty = py::object(module.attr("empty")).release().ptr();
  api.reader = load_facts_reader();
  api.tensor_type =
      py::object(module.attr("Tensor")).release().ptr();  // set last: marks `api` ready
  return &api;
}

[[noreturn]] void fail(ErrorKind kind, std::string_view op, std::string_view arg,
                       std::string_view expected, std::string_view actual) {
  throw_argument_error(kind, op, arg, expected, actual);
}

std::string type_name(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

// A new reference from a no-argument method call; Python errors become kInvalidArgument.
py::object call_method(py::handle obj, PyObject* name, std::string_view op, std::string_view arg) {
  PyObject* result = PyObject_CallMethodNoArgs(obj.ptr(), name);
  if (result == nullptr) {
    std::string what = py::error_already_set().what();
    fail(ErrorKind::kInvalidArgument, op, arg, "a strided CPU tensor", what);
  }
  return py::reinterpret_steal<py::object>(result);
}

Dims dims_of(py::handle tuple, std::string_view op, std::string_view arg) {
  Py_ssize_t n = PyTuple_GET_SIZE(tuple.ptr());
  if (n > kMaxRank) {
    fail(ErrorKind::kInvalidArgument, op, arg, "rank <= " + std::to_string(kMaxRank),
         "rank " + std::to_string(n));
  }
  Dims dims;
  for (Py_ssize_t i = 0; i < n; ++i)
    dims.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(tuple.ptr(), i)));
  return dims;
}

[[noreturn]] void fail_device(py::handle obj, std::string_view op, std::string_view arg) {
  static PyObject* const kDevice = PyUnicode_InternFromString("device");
  std::string device = py::str(obj.attr(py::handle(kDevice)));
  fail(ErrorKind::kInvalidArgument, op, arg, "a CPU tensor (this build has no CUDA)",
       "a tensor on " + device);
}

bool fast_path_enabled = true;  // tests turn it off to exercise the Python path

// A tensor with the negative or conjugate bit reads as the negation/conjugate of its memory.
// An input is materialised (one copy, rare); an output is refused: raw writes into it would
// come back with signs flipped.
PyTensor resolve_bits(py::handle obj, bool neg, std::string_view op, std::string_view arg,
                      bool writable) {
  const char* bit = neg ? "negative" : "conjugate";
  if (writable) {
    fail(ErrorKind::kInvalidArgument, op, arg, "an output without the negative or conjugate bit",
         std::string("a view with the ") + bit + " bit (write into a plain tensor, then copy)");
  }
  static PyObject* const kResolveNeg = PyUnicode_InternFromString("resolve_neg");
  static PyObject* const kResolveConj = PyUnicode_InternFromString("resolve_conj");
  py::object resolved = call_method(obj, kResolveConj, op, arg);
  resolved = call_method(resolved, kResolveNeg, op, arg);
  if (resolved.ptr() == obj.ptr()) {
    fail(ErrorKind::kInvalidArgument, op, arg, "a tensor torch can resolve",
         std::string("a view whose ") + bit + " bit stays set");
  }
  return to_tensor(resolved, op, arg, writable);
}

PyTensor from_torch(py::handle obj, const TorchApi& api, std::string_view op, std::string_view arg,
                    bool writable) {
  if (TorchFacts facts;
      fast_path_enabled && api.reader != nullptr && api.reader(obj.ptr(), &facts)) {
    if (!facts.is_cpu) fail_device(obj, op, arg);
    if (facts.is_neg || facts.is_conj) {
      return resolve_bits(obj, facts.is_neg, op, arg, writable);
    }
    return {import_view(facts.data, Dims(std::span<const std::int64_t>(facts.sizes, facts.rank)),
                        Dims(std::span<const std::int64_t>(facts.strides, facts.rank)), facts.dtype,
                        op, arg),
            Frontend::kTorch, py::reinterpret_borrow<py::object>(obj)};
  }
  static PyObject* const kIsCpu = PyUnicode_InternFromString("is_cpu");
  static PyObject* const kDtype = PyUnicode_InternFromString("dtype");
  static PyObject* const kDataPtr = PyUnicode_InternFromString("data_ptr");
  static PyObject* const kSize = PyUnicode_InternFromString("size");
  static PyObject* const kStride = PyUnicode_InternFromString("stride");
  static PyObject* const kIsNeg = PyUnicode_InternFromString("is_neg");
  static PyObject* const kIsConj = PyUnicode_InternFromString("is_conj");
  py::object is_cpu = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), kIsCpu));
  if (!is_cpu) throw py::error_already_set();
  if (is_cpu.ptr() != Py_True) fail_device(obj, op, arg);
  py::object dtype = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), kDtype));
  if (!dtype) throw py::error_already_set();
  std::size_t t = 0;
  while (t < kTorchTypes.size() && api.dtypes[t] != dtype.ptr()) ++t;
  if (t == kTorchTypes.size()) {
    fail(ErrorKind::kInvalidType, op, arg, "a supported dtype", std::string(py::str(dtype)));
  }
  const bool neg = call_method(obj, kIsNeg, op, arg).ptr() == Py_True;
  const bool conj = call_method(obj, kIsConj, op, arg).ptr() == Py_True;
  if (neg || conj) return resolve_bits(obj, neg, op, arg, writable);
  void* data = PyLong_AsVoidPtr(call_method(obj, kDataPtr, op, arg).ptr());
  Dims shape = dims_of(call_method(obj, kSize, op, arg), op, arg);
  Dims strides = dims_of(call_method(obj, kStride, op, arg), op, arg);
  return {import_view(data, shape, strides, kTorchTypes[t], op, arg), Frontend::kTorch,
          py::reinterpret_borrow<py::object>(obj)};
}

DataType numpy_dtype(const py::dtype& dtype, std::string_view op, std::string_view arg) {
  char kind = dtype.kind();
  auto size = dtype.itemsize();
  if (dtype.byteorder() == '>') {
    fail(ErrorKind::kInvalidType, op, arg, "native byte order", "a big-endian dtype");
  }
  if (kind == 'b' && size == 1) return DataType::kBool;
  if (kind == 'u' && size == 1) return DataType::kUInt8;
  if (kind == 'i' && size == 1) return DataType::kInt8;
  if (kind == 'i' && size == 2) return DataType::kInt16;
  if (kind == 'i' && size == 4) return DataType::kInt32;
  if (kind == 'i' && size == 8) return DataType::kInt64;
  if (kind == 'f' && size == 2) return DataType::kFloat16;
  if (kind == 'f' && size == 4) return DataType::kFloat32;
  if (kind == 'f' && size == 8) return DataType::kFloat64;
  fail(ErrorKind::kInvalidType, op, arg, "a supported dtype",
       "numpy dtype " + std::string(py::str(py::handle(dtype))));
}

// Byte strides to element strides.
Dims element_strides(const Dims& shape, const std::int64_t* bytes, std::int64_t itemsize,
                     std::string_view op, std::string_view arg) {
  Dims strides;
  for (int i = 0; i < shape.size(); ++i) {
    if (bytes[i] % itemsize != 0) {
      fail(ErrorKind::kInvalidArgument, op, arg,
           "byte strides that are multiples of the itemsize " + std::to_string(itemsize),
           "byte stride " + std::to_string(bytes[i]) + " in dim " + std::to_string(i));
    }
    strides.push_back(bytes[i] / itemsize);
  }
  return strides;
}

PyTensor from_numpy(py::handle obj, std::string_view op, std::string_view arg, bool writable) {
  auto array = py::reinterpret_borrow<py::array>(obj);
  if (array.ndim() > kMaxRank) {
    fail(ErrorKind::kInvalidArgument, op, arg, "rank <= " + std::to_string(kMaxRank),
         "rank " + std::to_string(array.ndim()));
  }
  if (writable && !array.writeable()) {
    fail(ErrorKind::kInvalidArgument, op, arg, "a writable array", "a read-only array");
  }
  DataType dtype = numpy_dtype(array.dtype(), op, arg);
  Dims shape(std::span<const std::int64_t>(reinterpret_cast<const std::int64_t*>(array.shape()),
                                           array.ndim()));
  Dims strides = element_strides(shape, reinterpret_cast<const std::int64_t*>(array.strides()),
                                 array.itemsize(), op, arg);
  return {import_view(const_cast<void*>(array.data()), shape, strides, dtype, op, arg),
          Frontend::kNumpy, std::move(array)};
}

// `capsule`: a "dltensor" PyCapsule (from __dlpack__() or torch.utils.dlpack.to_dlpack).
// Legacy DLPack cannot say memory is read-only; exporters of read-only memory (numpy) refuse.
PyTensor from_dlpack(py::object capsule, std::string_view op, std::string_view arg, bool writable) {
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  // The capsule is consumed: its deleter now runs when `holder` goes away.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  py::capsule holder(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter != nullptr) m->deleter(m);
  });
  return {tensor_from_dltensor(managed->dl_tensor, op, arg, writable), Frontend::kNumpy,
          std::move(holder)};
}

// Any other buffer-protocol object (bytes, bytearray, array.array, mmap): read through a
// memoryview, so that bytes are uint8 and a read-only buffer is refused as an output.
PyTensor from_buffer(py::handle obj, std::string_view op, std::string_view arg, bool writable) {
  py::object view = py::reinterpret_steal<py::object>(PyMemoryView_FromObject(obj.ptr()));
  if (!view) throw py::error_already_set();
  if (writable && PyMemoryView_GET_BUFFER(view.ptr())->readonly) {
    fail(ErrorKind::kInvalidArgument, op, arg, "writable memory",
         "a read-only buffer of type " + type_name(obj));
  }
  py::module_ numpy = py::module_::import("numpy");
  return from_numpy(numpy.attr("asarray")(view), op, arg, writable);
}

// tl.reinterpret(storage, dtype): uint8 storage read as an 8-bit float dtype, which torch 1.13
// and numpy cannot hold (an fp8 KV cache), by pointer.
PyTensor reinterpreted(py::handle obj, std::string_view op, std::string_view arg, bool writable) {
  PyTensor t = to_tensor(obj.attr("_tl_storage"), op, arg, writable);
  const py::object dtype = obj.attr("_tl_dtype");
  const DataType wanted =
      py::isinstance<DataType>(dtype) ? py::cast<DataType>(dtype) : parse_dtype(dtype, op, arg);
  const DataType storage = t.view.dtype();
  if (wanted != storage &&
      !(is_floating(wanted) && size_of(wanted) == 1 && storage == DataType::kUInt8)) {
    fail(ErrorKind::kInvalidType, op, arg, "an 8-bit float dtype over uint8 storage",
         std::string(name_of(wanted)) + " over " + std::string(name_of(storage)));
  }
  t.view = with_dtype(t.view, wanted, op, arg);
  return t;
}

}  // namespace

PyTensor to_tensor(py::handle obj, std::string_view op, std::string_view arg, bool writable) {
  if (const TorchApi* api = torch_api();
      api != nullptr &&
      PyObject_TypeCheck(obj.ptr(), reinterpret_cast<PyTypeObject*>(api->tensor_type))) {
    return from_torch(obj, *api, op, arg, writable);
  }
  if (obj.is_none()) {
    fail(ErrorKind::kInvalidType, op, arg, "a tensor (torch.Tensor, numpy.ndarray or DLPack)",
         "None");
  }
  if (py::isinstance<py::array>(obj)) return from_numpy(obj, op, arg, writable);
  if (py::hasattr(obj, "_tl_storage")) return reinterpreted(obj, op, arg, writable);
  if (py::hasattr(obj, "__dlpack__")) {
    return from_dlpack(obj.attr("__dlpack__")(), op, arg, writable);
  }
  if (PyCapsule_IsValid(obj.ptr(), "dltensor")) {
    return from_dlpack(py::reinterpret_borrow<py::object>(obj), op, arg, writable);
  }
  if (py::hasattr(obj, "__array_interface__")) {
    py::module_ numpy = py::module_::import("numpy");
    return from_numpy(numpy.attr("asarray")(obj), op, arg, writable);
  }
  if (PyObject_CheckBuffer(obj.ptr())) return from_buffer(obj, op, arg, writable);
  fail(ErrorKind::kInvalidType, op, arg, "a tensor (torch.Tensor, numpy.ndarray or DLPack)",
       "an object of type " + type_name(obj));
}

bool torch_fast_path_active() {
  const TorchApi* api = torch_api();
  return fast_path_enabled && api != nullptr && api->reader != nullptr;
}

void set_torch_fast_path(bool enabled) { fast_path_enabled = enabled; }

PyTensor allocate(Frontend frontend, const Dims& shape, DataType dtype, std::string_view op,
                  std::string_view arg) {
  bool byte_float = is_floating(dtype) && size_of(dtype) == 1;
  DataType storage = byte_float ? DataType::kUInt8 : dtype;
  py::tuple sizes(shape.size());
  for (int i = 0; i < shape.size(); ++i) sizes[i] = py::int_(shape[i]);
  py::object result;
  if (frontend == Frontend::kTorch) {
    const TorchApi* api = torch_api();
    std::size_t t = 0;
    while (t < kTorchTypes.size() && kTorchTypes[t] != storage) ++t;
    if (api == nullptr || t == kTorchTypes.size()) {
      fail(ErrorKind::kInvalidType, op, arg, "a dtype torch can allocate", name_of(dtype));
    }
    result = py::handle(api->empty)(sizes, py::arg("dtype") = py::handle(api->dtypes[t]));
  } else {
    if (storage == DataType::kBFloat16) {
      fail(ErrorKind::kInvalidType, op, arg, "a dtype numpy can allocate (pass out=)",
           name_of(dtype));
    }
    result = py::array(py::dtype(std::string(name_of(storage))),
                       std::vector<py::ssize_t>(shape.begin(), shape.end()));
  }
  PyTensor tensor = to_tensor(result, op, arg, true);
  if (byte_float) tensor.view = with_dtype(tensor.view, dtype, op, arg);
  return tensor;
}

PyTensor output(py::handle obj, Frontend frontend, const Dims& shape, DataType dtype,
                std::string_view op, std::string_view arg) {
  if (obj.is_none()) return allocate(frontend, shape, dtype, op, arg);
  return to_tensor(obj, op, arg, true);
}

DataType parse_dtype(py::handle obj, std::string_view op, std::string_view arg) {
  if (py::isinstance<py::str>(obj)) {
    std::string name = py::str(obj);
    if (auto dtype = parse_data_type(name)) return *dtype;
    fail(ErrorKind::kInvalidType, op, arg, "a dtype name such as 'float8_e4m3fn'", name);
  }
  if (const TorchApi* api = torch_api()) {
    for (std::size_t t = 0; t < kTorchTypes.size(); ++t) {
      if (api->dtypes[t] == obj.ptr()) return kTorchTypes[t];
    }
  }
  try {
    return numpy_dtype(py::dtype::from_args(py::reinterpret_borrow<py::object>(obj)), op, arg);
  } catch (const py::error_already_set&) {
    fail(ErrorKind::kInvalidType, op, arg, "a dtype (str, torch.dtype or numpy dtype)",
         std::string(py::repr(obj)));
  }
}

Tensor with_dtype(const Tensor& view, DataType dtype, std::string_view op, std::string_view arg) {
  if (size_of(dtype) != view.element_size()) {
    fail(ErrorKind::kInvalidType, op, arg,
         "storage of " + std::to_string(size_of(dtype)) + "-byte elements for " +
             std::string(name_of(dtype)),
         std::string(name_of(view.dtype())));
  }
  return Tensor(view.data(), view.shape(), view.strides(), dtype, view.device());
}

}  // namespace tileops::python
