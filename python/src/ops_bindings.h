// Bindings of tileops::ops as tileops._C.ops: free functions, class forms and the registry.
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

#include "python/src/tensor_interop.h"
#include "tileops/core/tensor.h"

namespace tileops::python {

// Free functions (ops_functions.cc) and class forms (ops_classes.cc).
void bind_op_functions(py::module_& ops);
void bind_op_classes(py::module_& ops);
// gemm, linear's packed weights and linear's dispatch to them (gemm_bindings.cc); after
// bind_declared_ops, whose linear it wraps.
void bind_gemm_ops(py::module_& ops);
// reshape_and_cache's combined-cache overload and the samplers (kv_bindings.cc).
void bind_kv_ops(py::module_& ops);
// The samplers' class forms (kv_classes.cc).
void bind_kv_classes(py::module_& ops);

// k or p of a sampler: None (off), a Python number (every row) or a tensor (per row); `tensor`
// views `k`/`p` for numbers, so the struct must outlive the call.
struct SamplerFilter {
  PyTensor tensor;
  std::int64_t k = 0;
  double p = 1.0;
  SamplerFilter() = default;
  SamplerFilter(const SamplerFilter&) = delete;
  SamplerFilter& operator=(const SamplerFilter&) = delete;
};
void read_k(py::handle obj, std::string_view op, std::string_view arg, SamplerFilter& f);
void read_p(py::handle obj, std::string_view op, std::string_view arg, SamplerFilter& f);
// `seed`, or one draw from `generator` (a torch.Generator) when it is not None.
std::uint64_t sampler_seed(std::uint64_t seed, py::handle generator);
// [B] for weights [B, V] (kInvalidArgument naming `arg` for another rank).
Dims sampler_rows(const Tensor& weights, std::string_view op, std::string_view arg);
// The flash-attn adapters mha_varlen_fwd, mha_fwd_kvcache (attention_bindings.cc).
void bind_attention_ops(py::module_& ops);

// Runs `call` with the GIL released (arguments are converted before, results after).
template <typename Call>
void run_released(Call&& call) {
  py::gil_scoped_release release;
  call();
}

// What an operator returns for an output argument: the caller's object when given, the
// allocated one otherwise.
inline py::object result_of(py::handle given, const PyTensor& tensor) {
  return given.is_none() ? tensor.keep : py::reinterpret_borrow<py::object>(given);
}

// cat's output shape (kInvalidArgument when the inputs cannot give one).
Dims cat_shape(std::string_view op, const std::vector<Tensor>& tensors, int dim);

// cat's inputs: a sequence of tensors (kInvalidType otherwise).
struct TensorList {
  std::vector<PyTensor> owners;
  std::vector<Tensor> views;
};
TensorList to_tensor_list(py::handle obj, std::string_view op, std::string_view arg);

// cast's target dtype and optional reinterpretation of uint8 storage as an 8-bit float.
Tensor reinterpret_as(const Tensor& view, py::handle dtype, std::string_view op,
                      std::string_view arg);

}  // namespace tileops::python
