// The `tileops` command-line entry, exposed as tileops._C.run_cli(args) -> exit status.
#pragma once

#include <pybind11/pybind11.h>

namespace tileops::python {

namespace py = pybind11;

void bind_cli(py::module_& m);

}  // namespace tileops::python
