// Python exceptions for tileops::Error kinds, and the per-call Context from Python arguments.
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

#include "tileops/runtime/context.h"

namespace tileops::python {

namespace py = pybind11;

// kInvalidArgument -> ValueError, kInvalidType -> TypeError, kUnsupported ->
// NotImplementedError, kOutOfMemory -> MemoryError, others -> RuntimeError; same message.
void register_errors(py::module_& m);

// The Context of one call; `stream` must be None on the CPU (kInvalidArgument otherwise).
Context make_context(std::string_view op, int implementation_index, py::handle stream);

}  // namespace tileops::python
