#include <string>

#include "python/src/ops_bindings.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops::python {

Dims broadcast_shape(std::string_view op, const Tensor& a, const Tensor& b) {
  int rank = std::max(a.rank(), b.rank());
  Dims shape;
  for (int i = 0; i < rank; ++i) {
    int ia = i - (rank - a.rank()), ib = i - (rank - b.rank());
    std::int64_t ea = ia >= 0 ? a.shape()[ia] : 1, eb = ib >= 0 ? b.shape()[ib] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      throw_argument_error(ErrorKind::kInvalidArgument, op, "other",
                           "a shape broadcastable with " + a.shape().to_string(),
                           b.shape().to_string());
    }
    shape.push_back(ea == 1 ? eb : ea);
  }
  return shape;
}

Dims embedding_shape(std::string_view op, const Tensor& input_ids, const Tensor& weight) {
  if (weight.rank() != 2) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "weight", "rank 2 [num_embeddings, D]",
                         weight.shape().to_string());
  }
  Dims shape = input_ids.shape();
  if (shape.size() == kMaxRank) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "input_ids",
                         "rank < " + std::to_string(kMaxRank), shape.to_string());
  }
  shape.push_back(weight.shape()[1]);
  return shape;
}

Dims silu_and_mul_shape(std::string_view op, const Tensor& input, int dim) {
  int d = normalize_dim(dim, input.rank());
  if (d < 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "dim",
                         "a dim of a rank-" + std::to_string(input.rank()) + " tensor",
                         std::to_string(dim));
  }
  Dims shape = input.shape();
  if (shape[d] % 2 != 0) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, "input",
                         "an even extent along dim " + std::to_string(dim), shape.to_string());
  }
  shape[d] /= 2;
  return shape;
}

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
