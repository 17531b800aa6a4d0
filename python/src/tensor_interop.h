// Tensor interop: torch tensors, numpy arrays and DLPack objects become non-owning tileops
// views without copies, and outputs the caller omitted are allocated as the caller's kind.
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

#include "tileops/core/tensor.h"

namespace tileops::python {

namespace py = pybind11;

// Which library a tensor came from; omitted outputs are allocated by the same one.
enum class Frontend { kTorch, kNumpy };

struct PyTensor {
  Tensor view;
  Frontend frontend = Frontend::kNumpy;
  py::object keep;  // what keeps the memory alive (the object itself or a DLPack holder)
};

// Converts `obj` (argument `arg` of operator `op`) to a view. Throws tileops::Error:
// kInvalidType for None, an unknown Python type or an unsupported dtype; kInvalidArgument for
// negative strides, byte strides that are not a multiple of the itemsize, non-CPU memory, a rank
// above kMaxRank, sizes beyond int64 (import_view), or (when `writable`) read-only memory or a
// torch view with the negative/conjugate bit. Such a view as an input is materialised.
PyTensor to_tensor(py::handle obj, std::string_view op, std::string_view arg,
                   bool writable = false);

// A new contiguous tensor of `frontend`'s kind; 8-bit float formats are stored as uint8. Its
// view has `dtype`.
PyTensor allocate(Frontend frontend, const Dims& shape, DataType dtype, std::string_view op,
                  std::string_view arg);

// `obj` as an output: converted when given, allocated when None.
PyTensor output(py::handle obj, Frontend frontend, const Dims& shape, DataType dtype,
                std::string_view op, std::string_view arg);

// A dtype given as a string ("float8_e4m3fn", "bf16"), a torch.dtype or a numpy dtype.
DataType parse_dtype(py::handle obj, std::string_view op, std::string_view arg);

// Whether torch tensors are read in C++ (tileops._torch_view loaded) rather than through
// Python calls. False when torch has not been imported.
bool torch_fast_path_active();

// Turns the C++ torch reader off (tests of the Python-attribute path) or back on.
void set_torch_fast_path(bool enabled);

// Reinterprets a view's element type: only between types of the same size.
Tensor with_dtype(const Tensor& view, DataType dtype, std::string_view op, std::string_view arg);

}  // namespace tileops::python
