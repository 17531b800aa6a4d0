// tileops._C.ops bindings of the KV-cache and sampling operators that the declarations cannot
// generate (rotary_embedding, apply_rotary_pos_emb and reshape_and_cache are generated):
// reshape_and_cache's overload for one kv_cache, and the samplers, which take k/p as None, a
// number or a per-row tensor, and a seed or a torch.Generator.
#include <pybind11/stl.h>

#include <string>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

void reshape_and_cache_combined(py::handle key, py::handle value, py::handle kv_cache,
                                py::handle slot_mapping, int index, py::handle stream) {
  constexpr const char* kOp = "reshape_and_cache";
  Context ctx = make_context(kOp, index, stream);
  PyTensor k = to_tensor(key, kOp, "key");
  PyTensor v = to_tensor(value, kOp, "value");
  PyTensor kv = to_tensor(kv_cache, kOp, "kv_cache", true);
  PyTensor slots = to_tensor(slot_mapping, kOp, "slot_mapping");
  run_released([&] { ops::reshape_and_cache(k.view, v.view, kv.view, slots.view, ctx); });
}

}  // namespace

void read_k(py::handle obj, std::string_view op, std::string_view arg, SamplerFilter& f) {
  if (obj.is_none()) return;
  if (PyLong_Check(obj.ptr())) {
    f.k = int_arg(obj, op, arg);
    if (f.k > 0) f.tensor.view = Tensor(&f.k, Dims{1}, DataType::kInt64);
    return;
  }
  f.tensor = to_tensor(obj, op, arg);
}

void read_p(py::handle obj, std::string_view op, std::string_view arg, SamplerFilter& f) {
  if (obj.is_none()) return;
  if (PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr())) {
    // p <= 0 stays a tensor so that the operator reports it.
    f.p = float_arg(obj, op, arg);
    if (f.p < 1.0 || !(f.p > 0.0)) f.tensor.view = Tensor(&f.p, Dims{1}, DataType::kFloat64);
    return;
  }
  f.tensor = to_tensor(obj, op, arg);
}

Dims sampler_rows(const Tensor& weights, std::string_view op, std::string_view arg) {
  if (weights.rank() != 2) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, arg, "rank 2 [B, V]",
                         weights.shape().to_string());
  }
  return Dims{weights.size(0)};
}

std::uint64_t sampler_seed(std::uint64_t seed, py::handle generator) {
  if (generator.is_none()) return seed;
  // A torch.Generator (torch is then imported): one draw from it, so that each call with the
  // same generator gets fresh tokens, as torch.multinomial(generator=...) would.
  py::object torch = py::module_::import("torch");
  return torch
      .attr("randint")(0, std::int64_t{1} << 62, py::make_tuple(1),
                       py::arg("generator") = generator)
      .attr("item")()
      .cast<std::uint64_t>();
}

namespace {

py::object top_k_top_p_sampler(py::handle logits, py::handle k, py::handle p, py::handle out,
                               std::uint64_t seed, py::handle generator, int index,
                               py::handle stream) {
  constexpr const char* kOp = "top_k_top_p_sampler";
  Context ctx = make_context(kOp, index, stream);
  seed = sampler_seed(seed, generator);
  PyTensor x = to_tensor(logits, kOp, "logits");
  SamplerFilter kf, pf;
  read_k(k, kOp, "k", kf);
  read_p(p, kOp, "p", pf);
  PyTensor o =
      output(out, x.frontend, sampler_rows(x.view, kOp, "logits"), DataType::kInt64, kOp, "out");
  run_released(
      [&] { ops::top_k_top_p_sampler(x.view, kf.tensor.view, pf.tensor.view, seed, o.view, ctx); });
  return result_of(out, o);
}

py::object topk_topp_sampling(py::handle probs, py::handle topk, py::handle topp, py::handle out,
                              std::uint64_t seed, py::handle generator, int index,
                              py::handle stream) {
  constexpr const char* kOp = "topk_topp_sampling";
  Context ctx = make_context(kOp, index, stream);
  seed = sampler_seed(seed, generator);
  PyTensor x = to_tensor(probs, kOp, "probs");
  PyTensor o =
      output(out, x.frontend, sampler_rows(x.view, kOp, "probs"), DataType::kInt32, kOp, "out");
  const std::int64_t k = int_arg(topk, kOp, "topk");
  const double p = float_arg(topp, kOp, "topp");
  run_released([&] { ops::topk_topp_sampling(x.view, k, p, seed, o.view, ctx); });
  return result_of(out, o);
}

}  // namespace

void bind_kv_ops(py::module_& m) {
  auto none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
  // After the generated reshape_and_cache: its overload for one kv_cache.
  m.def("reshape_and_cache", &reshape_and_cache_combined,
        "The same into one kv_cache [2, num_blocks, block_size, Hkv, D].", py::arg("key"),
        py::arg("value"), py::arg("kv_cache"), py::arg("slot_mapping"), py::kw_only(), index,
        stream);
  m.def("top_k_top_p_sampler", &top_k_top_p_sampler,
        "One token per row of logits [B, V] from softmax restricted to the top k and the top-p "
        "nucleus, into out (int64 or int32; omitted: a new int64 tensor); k/p: None (off), a "
        "number or a per-row tensor. Deterministic per seed; a "
        "torch.Generator, when given, supplies the seed (one draw per call).",
        py::arg("logits"), py::arg("k") = none, py::arg("p") = none, py::arg("out") = none,
        py::kw_only(), py::arg("seed") = 0, py::arg("generator") = none, index, stream);
  m.def("topk_topp_sampling", &topk_topp_sampling,
        "One token per row of probs [B, V] into out (int32 or int64; omitted: a new int32 "
        "tensor); topk <= 0 / topp >= 1: off.",
        py::arg("probs"), py::arg("topk") = 0, py::arg("topp") = 1.0, py::arg("out") = none,
        py::kw_only(), py::arg("seed") = 0, py::arg("generator") = none, index, stream);
}

}  // namespace tileops::python
