// tileops._C.ops rotary_embedding, apply_rotary_pos_emb, reshape_and_cache and the samplers,
// with vLLM's argument names. Rotary without outputs works in place (vLLM) and returns
// (query, key); the samplers take k/p as None, a number or a per-row tensor, and a seed.
#include <pybind11/stl.h>

#include <string>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

// An optional tensor argument: None becomes an undefined Tensor.
PyTensor optional(py::handle obj, std::string_view op, std::string_view arg,
                  bool writable = false) {
  return obj.is_none() ? PyTensor{} : to_tensor(obj, op, arg, writable);
}

py::object given_or(py::handle out, py::handle input) {
  return py::reinterpret_borrow<py::object>(out.is_none() ? input : out);
}

py::tuple rotary_embedding(py::handle positions, py::handle query, py::handle key,
                           std::int64_t head_size, py::handle cos_sin_cache, bool is_neox_style,
                           py::handle rotary_dim, py::handle query_out, py::handle key_out,
                           int index, py::handle stream) {
  constexpr const char* kOp = "rotary_embedding";
  Context ctx = make_context(kOp, index, stream);
  PyTensor pos = to_tensor(positions, kOp, "positions");
  PyTensor q = to_tensor(query, kOp, "query", query_out.is_none());
  PyTensor k = optional(key, kOp, "key", key_out.is_none());
  PyTensor cache = to_tensor(cos_sin_cache, kOp, "cos_sin_cache");
  PyTensor q_out = optional(query_out, kOp, "query_out", true);
  PyTensor k_out = optional(key_out, kOp, "key_out", true);
  const std::int64_t rot = rotary_dim.is_none() ? 0 : int_arg(rotary_dim, kOp, "rotary_dim");
  run_released([&] {
    ops::rotary_embedding(pos.view, q.view, k.view, head_size, cache.view, is_neox_style, rot,
                          q_out.view, k_out.view, ctx);
  });
  return py::make_tuple(given_or(query_out, query), given_or(key_out, key));
}

py::tuple apply_rotary_pos_emb(py::handle query, py::handle key, py::handle cos, py::handle sin,
                               std::int64_t head_size, bool is_neox_style, py::handle query_out,
                               py::handle key_out, int index, py::handle stream) {
  constexpr const char* kOp = "apply_rotary_pos_emb";
  Context ctx = make_context(kOp, index, stream);
  PyTensor q = to_tensor(query, kOp, "query", query_out.is_none());
  PyTensor k = optional(key, kOp, "key", key_out.is_none());
  PyTensor c = to_tensor(cos, kOp, "cos");
  PyTensor s = to_tensor(sin, kOp, "sin");
  PyTensor q_out = optional(query_out, kOp, "query_out", true);
  PyTensor k_out = optional(key_out, kOp, "key_out", true);
  run_released([&] {
    ops::apply_rotary_pos_emb(q.view, k.view, c.view, s.view, head_size, is_neox_style, q_out.view,
                              k_out.view, ctx);
  });
  return py::make_tuple(given_or(query_out, query), given_or(key_out, key));
}

void reshape_and_cache(py::handle key, py::handle value, py::handle key_cache,
                       py::handle value_cache, py::handle slot_mapping, int index,
                       py::handle stream) {
  constexpr const char* kOp = "reshape_and_cache";
  Context ctx = make_context(kOp, index, stream);
  PyTensor k = to_tensor(key, kOp, "key");
  PyTensor v = to_tensor(value, kOp, "value");
  PyTensor kc = to_tensor(key_cache, kOp, "key_cache", true);
  PyTensor vc = to_tensor(value_cache, kOp, "value_cache", true);
  PyTensor slots = to_tensor(slot_mapping, kOp, "slot_mapping");
  run_released([&] { ops::reshape_and_cache(k.view, v.view, kc.view, vc.view, slots.view, ctx); });
}

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
  m.def("rotary_embedding", &rotary_embedding,
        "vLLM rotary embedding; in place into query/key when the outputs are omitted. Returns "
        "(query_out or query, key_out or key).",
        py::arg("positions"), py::arg("query"), py::arg("key"), py::arg("head_size"),
        py::arg("cos_sin_cache"), py::arg("is_neox_style") = true, py::arg("rotary_dim") = none,
        py::arg("query_out") = none, py::arg("key_out") = none, py::kw_only(), index, stream);
  m.def("apply_rotary_pos_emb", &apply_rotary_pos_emb,
        "Rotary embedding with cos/sin gathered per token ([T, rot/2], or [T, head_size] per "
        "element); in place when the outputs are omitted. Returns (query, key).",
        py::arg("query"), py::arg("key"), py::arg("cos"), py::arg("sin"), py::arg("head_size"),
        py::arg("is_neox_style") = true, py::arg("query_out") = none, py::arg("key_out") = none,
        py::kw_only(), index, stream);
  m.def("reshape_and_cache", &reshape_and_cache,
        "key/value [T, Hkv, D] into key_cache/value_cache [num_blocks, block_size, Hkv, D] at "
        "slot_mapping (-1 skips).",
        py::arg("key"), py::arg("value"), py::arg("key_cache"), py::arg("value_cache"),
        py::arg("slot_mapping"), py::kw_only(), index, stream);
  m.def("reshape_and_cache", &reshape_and_cache_combined,
        "The same into one kv_cache [2, num_blocks, block_size, Hkv, D].", py::arg("key"),
        py::arg("value"), py::arg("kv_cache"), py::arg("slot_mapping"), py::kw_only(), index,
        stream);
  m.def("top_k_top_p_sampler", &top_k_top_p_sampler,
        "One int64 token per row of logits [B, V] from softmax restricted to the top k and the "
        "top-p nucleus; k/p: None (off), a number or a per-row tensor. Deterministic per seed; a "
        "torch.Generator, when given, supplies the seed (one draw per call).",
        py::arg("logits"), py::arg("k") = none, py::arg("p") = none, py::arg("out") = none,
        py::kw_only(), py::arg("seed") = 0, py::arg("generator") = none, index, stream);
  m.def("topk_topp_sampling", &topk_topp_sampling,
        "One int32 token per row of probs [B, V] (topk <= 0 / topp >= 1: off).", py::arg("probs"),
        py::arg("topk") = 0, py::arg("topp") = 1.0, py::arg("out") = none, py::kw_only(),
        py::arg("seed") = 0, py::arg("generator") = none, index, stream);
}

}  // namespace tileops::python
