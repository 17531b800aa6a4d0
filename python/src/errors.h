// Python exceptions for tileops::Error kinds, and the per-call Context from Python arguments.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string_view>

#include "tileops/runtime/context.h"

namespace tileops::python {

namespace py = pybind11;

// kInvalidArgument -> ValueError, kInvalidType -> TypeError, kUnsupported ->
// NotImplementedError, kOutOfMemory -> MemoryError, others -> RuntimeError; same message.
void register_errors(py::module_& m);

// Errors of a kernel trace ("tl: file.py:12: 'construct': ...") raise these subclasses, which
// derive from RuntimeError as asc2's errors do and still from ValueError / TypeError as before:
// TraceError(ValueError, RuntimeError), TraceTypeError(TypeError, RuntimeError). Made by
// register_errors; added to tileops._C.tl by add_trace_errors.
void add_trace_errors(py::module_& tl);

// A Python int (or an object with __index__, not a bool) for integer argument `arg` of `op`:
// TypeError for other types, ValueError for a value beyond int64 (pybind's cast would say only
// "Unable to cast Python instance").
std::int64_t int_arg(py::handle obj, std::string_view op, std::string_view arg);

// A Python real number for `arg` of `op` (TypeError otherwise).
double float_arg(py::handle obj, std::string_view op, std::string_view arg);

// The Context of one call; `stream` must be None on the CPU (kInvalidArgument otherwise).
Context make_context(std::string_view op, int implementation_index, py::handle stream);

}  // namespace tileops::python
