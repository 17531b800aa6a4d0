// What the generated bindings of the declared operators (tools/opgen's python_ops.cc) call
// besides the conversions every binding uses.
#pragma once

#include <pybind11/pybind11.h>

#include <initializer_list>
#include <span>
#include <string_view>
#include <utility>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "python/src/tensor_interop.h"
#include "tileops/ops/declared_op.h"

namespace tileops::python {

// Output `arg` (a declaration index) of `op` when the caller omitted it: allocated as the inputs
// already in `views` imply, as `frontend`'s kind.
inline PyTensor allocate_output(const ops::DeclaredOp& op, int arg, std::span<const Tensor> views,
                                std::span<const double> attributes, Frontend frontend) {
  return allocate(frontend, op.output_shape(arg, views, attributes), op.output_dtype(arg, views),
                  op.name(), op.decl().args[arg].name);
}
inline PyTensor allocate_output(const ops::DeclaredOp& op, int arg,
                                std::initializer_list<Tensor> views,
                                std::span<const double> attributes, Frontend frontend) {
  return allocate_output(op, arg, std::span<const Tensor>(views.begin(), views.size()), attributes,
                         frontend);
}

// What a class form allocates for an output its __call__ omits: the geometry it was built for.
struct OutputSpec {
  Dims shape;
  DataType dtype = DataType::kFloat32;

  PyTensor get(py::handle out, Frontend frontend, std::string_view op, std::string_view arg) const {
    return output(out, frontend, shape, dtype, op, arg);
  }
};

// What an operator returns for an optional output: the caller's object when given, else the
// argument it was written into in place.
inline py::object given_or(py::handle out, py::handle in_place) {
  return py::reinterpret_borrow<py::object>(out.is_none() ? in_place : out);
}

// What an operator with requested outputs returns: the outputs that were computed (a requested
// one only where asked for), as one object or a tuple.
inline py::object results_of(std::initializer_list<std::pair<py::object, bool>> outputs) {
  py::list kept;
  for (const auto& [object, computed] : outputs) {
    if (computed) kept.append(object);
  }
  if (kept.size() == 1) return kept[0];
  return py::tuple(kept);
}

// The Python binding of every declared operator (generated).
void bind_declared_ops(py::module_& m);

}  // namespace tileops::python
