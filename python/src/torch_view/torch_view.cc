// tileops._torch_view: reads a torch.Tensor's data pointer, sizes, strides, dtype and device
// through torch's C++ headers. Only the header-inline parts of THPVariable/TensorImpl are used,
// so the module links to libc10 alone; it refuses to register under a different torch
// major.minor than the headers it was built with (the struct layouts would differ).
#include <pybind11/pybind11.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>

#include "python/src/torch_facts.h"

namespace tileops::python {
namespace {

bool to_data_type(c10::ScalarType type, DataType* out) {
  switch (type) {
    case c10::ScalarType::Bool:
      *out = DataType::kBool;
      return true;
    case c10::ScalarType::Char:
      *out = DataType::kInt8;
      return true;
    case c10::ScalarType::Short:
      *out = DataType::kInt16;
      return true;
    case c10::ScalarType::Int:
      *out = DataType::kInt32;
      return true;
    case c10::ScalarType::Long:
      *out = DataType::kInt64;
      return true;
    case c10::ScalarType::Byte:
      *out = DataType::kUInt8;
      return true;
    case c10::ScalarType::Half:
      *out = DataType::kFloat16;
      return true;
    case c10::ScalarType::BFloat16:
      *out = DataType::kBFloat16;
      return true;
    case c10::ScalarType::Float:
      *out = DataType::kFloat32;
      return true;
    case c10::ScalarType::Double:
      *out = DataType::kFloat64;
      return true;
    default:
      return false;
  }
}

bool read_facts(PyObject* tensor, TorchFacts* facts) {
  const at::Tensor& t = *reinterpret_cast<THPVariable*>(tensor)->cdata;
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->layout() != c10::kStrided || !impl->has_storage()) return false;
  if (!to_data_type(c10::typeMetaToScalarType(impl->dtype()), &facts->dtype)) return false;
  c10::IntArrayRef sizes = impl->sizes();
  c10::IntArrayRef strides = impl->strides();
  if (sizes.size() > static_cast<std::size_t>(kMaxRank)) return false;
  facts->rank = static_cast<int>(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    facts->sizes[i] = sizes[i];
    facts->strides[i] = strides[i];
  }
  facts->is_cpu = impl->is_cpu();
  facts->is_neg = impl->is_neg();
  facts->is_conj = impl->is_conj();
  facts->data = facts->is_cpu ? impl->data() : nullptr;
  return true;
}

}  // namespace

PYBIND11_MODULE(_torch_view, m) {
  std::string built =
      std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + ".";
  std::string running = pybind11::str(pybind11::module_::import("torch").attr("__version__"));
  m.attr("built_for") = built.substr(0, built.size() - 1);
  if (running.rfind(built, 0) != 0) {
    m.attr("reader") = pybind11::none();
    return;
  }
  TorchFactsReader reader = &read_facts;
  m.attr("reader") = pybind11::capsule(reinterpret_cast<void*>(reader), kTorchFactsCapsule);
}

}  // namespace tileops::python
