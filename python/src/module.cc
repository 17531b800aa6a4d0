// tileops._C: the extension module (errors, tileops._C.ops, tileops._C.tl, the CLI entry).
#include <pybind11/pybind11.h>

#include "python/src/cli.h"
#include "python/src/declared_bindings.h"
#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "python/src/tensor_interop.h"
#include "python/src/tl_bindings.h"

PYBIND11_MODULE(_C, m) {
  namespace py = pybind11;
  namespace tp = tileops::python;
  m.doc() = "tileops C++ extension; use the tileops package.";
  tp::register_errors(m);
  py::module_ ops = m.def_submodule("ops", "tileops operators");
  tp::bind_declared_ops(ops);
  tp::bind_op_functions(ops);
  tp::bind_op_classes(ops);
  tp::bind_gemm_ops(ops);
  tp::bind_kv_ops(ops);
  tp::bind_kv_classes(ops);
  tp::bind_attention_ops(ops);
  py::module_ tl = m.def_submodule("tl", "the tile language engine; use tileops.tl");
  tp::bind_tl_values(tl);
  tp::bind_tl_functions(tl);
  tp::bind_tl_nn_functions(tl);
  tp::bind_tl_control(tl);
  tp::bind_tl_kernel(tl);
  tp::bind_cli(m);
  m.def("_torch_fast_path", &tp::torch_fast_path_active,
        "Whether torch tensors are read in C++ (needs torch imported and tileops._torch_view).");
  m.def("_set_torch_fast_path", &tp::set_torch_fast_path, py::arg("enabled"),
        "Tests only: read torch tensors through Python attributes (False) or in C++ (True).");
  m.attr("__version__") = TILEOPS_VERSION;
}
