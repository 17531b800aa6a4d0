#include <string>

#include "python/src/ops_bindings.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops::python {

Dims cat_shape(std::string_view op, const std::vector<Tensor>& tensors, int dim) {
  if (tensors.empty()) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "tensors", "one or more tensors",
                         "an empty sequence");
  }
  Dims shape = tensors[0].shape();
  int d = normalize_dim(dim, shape.size());
  if (d < 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "dim",
                         "a dim of a rank-" + std::to_string(shape.size()) + " tensor",
                         std::to_string(dim));
  }
  shape[d] = 0;
  for (const Tensor& t : tensors) {
    if (t.rank() != shape.size()) {
      throw_argument_error(ErrorKind::kInvalidArgument, op, "tensors",
                           "tensors of rank " + std::to_string(shape.size()),
                           t.shape().to_string());
    }
    shape[d] = checked_add(shape[d], t.shape()[d], std::string(op) + ": argument 'tensors'");
  }
  return shape;
}

TensorList to_tensor_list(py::handle obj, std::string_view op, std::string_view arg) {
  if (!PySequence_Check(obj.ptr()) || py::isinstance<py::str>(obj) ||
      PyObject_HasAttrString(obj.ptr(), "__array_interface__") ||
      PyObject_HasAttrString(obj.ptr(), "__dlpack__")) {
    throw_argument_error(ErrorKind::kInvalidType, op, arg, "a list or tuple of tensors",
                         std::string("an object of type ") + Py_TYPE(obj.ptr())->tp_name);
  }
  TensorList list;
  auto seq = py::reinterpret_borrow<py::sequence>(obj);
  for (std::size_t i = 0; i < seq.size(); ++i) {
    std::string name = std::string(arg) + "[" + std::to_string(i) + "]";
    list.owners.push_back(to_tensor(seq[i], op, name));
    list.views.push_back(list.owners.back().view);
  }
  return list;
}

Tensor reinterpret_as(const Tensor& view, py::handle dtype, std::string_view op,
                      std::string_view arg) {
  if (dtype.is_none()) return view;
  DataType wanted = parse_dtype(dtype, op, arg);
  if (wanted == view.dtype()) return view;
  bool byte_float = is_floating(wanted) && size_of(wanted) == 1;
  if (!byte_float || view.dtype() != DataType::kUInt8) {
    throw_argument_error(
        ErrorKind::kInvalidType, op, arg,
        "the tensor's own dtype, or an 8-bit float over uint8 storage",
        std::string(name_of(wanted)) + " over " + std::string(name_of(view.dtype())));
  }
  return with_dtype(view, wanted, op, arg);
}

}  // namespace tileops::python
