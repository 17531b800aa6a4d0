// tileops._C.ops class forms of the KV-cache, rotary and sampling operators: the constructor
// takes the free function's arguments and specialises the operator once for that geometry
// (omitted rotary outputs mean in place, omitted sampler outputs a contiguous [B]); __call__
// runs it on new data of that geometry.
#include <memory>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

// PyTensor or an undefined view for None.
PyTensor optional(py::handle obj, std::string_view op, std::string_view arg, bool writable) {
  return obj.is_none() ? PyTensor{} : to_tensor(obj, op, arg, writable);
}

class RotaryEmbedding {
 public:
  RotaryEmbedding(py::handle positions, py::handle query, py::handle key, std::int64_t head_size,
                  py::handle cache, bool is_neox_style, py::handle rotary_dim, py::handle query_out,
                  py::handle key_out, int index) {
    Views v = views(positions, query, key, cache, query_out, key_out);
    const std::int64_t rot =
        rotary_dim.is_none() ? 0 : int_arg(rotary_dim, "rotary_embedding", "rotary_dim");
    op_ = std::make_shared<ops::RotaryEmbedding>(v.pos.view, v.q.view, v.k.view, head_size,
                                                 v.cache.view, is_neox_style, rot, v.q_out.view,
                                                 v.k_out.view, index);
  }
  py::tuple call(py::handle positions, py::handle query, py::handle key, py::handle cache,
                 py::handle query_out, py::handle key_out, py::handle stream) const {
    Context ctx = make_context("rotary_embedding", 0, stream);
    Views v = views(positions, query, key, cache, query_out, key_out);
    run_released([&] {
      (*op_)(v.pos.view, v.q.view, v.k.view, v.cache.view, v.q_out.view, v.k_out.view, ctx);
    });
    return py::make_tuple(
        py::reinterpret_borrow<py::object>(query_out.is_none() ? query : query_out),
        py::reinterpret_borrow<py::object>(key_out.is_none() ? key : key_out));
  }

 private:
  struct Views {
    PyTensor pos, q, k, cache, q_out, k_out;
  };
  static Views views(py::handle positions, py::handle query, py::handle key, py::handle cache,
                     py::handle query_out, py::handle key_out) {
    constexpr const char* kOp = "rotary_embedding";
    Views v;
    v.pos = to_tensor(positions, kOp, "positions");
    v.q = to_tensor(query, kOp, "query", query_out.is_none());
    v.k = optional(key, kOp, "key", key_out.is_none());
    v.cache = to_tensor(cache, kOp, "cos_sin_cache");
    v.q_out = query_out.is_none() ? v.q : to_tensor(query_out, kOp, "query_out", true);
    v.k_out = key_out.is_none() ? v.k : optional(key_out, kOp, "key_out", true);
    return v;
  }

  std::shared_ptr<const ops::RotaryEmbedding> op_;
};

class ReshapeAndCache {
 public:
  ReshapeAndCache(py::handle key, py::handle value, py::handle key_cache, py::handle value_cache,
                  py::handle slot_mapping, int index) {
    Views v = views(key, value, key_cache, value_cache, slot_mapping);
    op_ = std::make_shared<ops::ReshapeAndCache>(v.k.view, v.v.view, v.kc.view, v.vc.view,
                                                 v.slots.view, index);
  }
  void call(py::handle key, py::handle value, py::handle key_cache, py::handle value_cache,
            py::handle slot_mapping, py::handle stream) const {
    Context ctx = make_context("reshape_and_cache", 0, stream);
    Views v = views(key, value, key_cache, value_cache, slot_mapping);
    run_released([&] { (*op_)(v.k.view, v.v.view, v.kc.view, v.vc.view, v.slots.view, ctx); });
  }

 private:
  struct Views {
    PyTensor k, v, kc, vc, slots;
  };
  static Views views(py::handle key, py::handle value, py::handle key_cache, py::handle value_cache,
                     py::handle slot_mapping) {
    constexpr const char* kOp = "reshape_and_cache";
    return {to_tensor(key, kOp, "key"), to_tensor(value, kOp, "value"),
            to_tensor(key_cache, kOp, "key_cache", true),
            to_tensor(value_cache, kOp, "value_cache", true),
            to_tensor(slot_mapping, kOp, "slot_mapping")};
  }

  std::shared_ptr<const ops::ReshapeAndCache> op_;
};

class TopKTopPSampler {
 public:
  TopKTopPSampler(py::handle logits, py::handle k, py::handle p, py::handle out, int index) {
    constexpr const char* kOp = "top_k_top_p_sampler";
    PyTensor x = to_tensor(logits, kOp, "logits");
    SamplerFilter kf, pf;
    read_k(k, kOp, "k", kf);
    read_p(p, kOp, "p", pf);
    PyTensor o = out_of(out, x);
    op_ = std::make_shared<ops::TopKTopPSampler>(x.view, kf.tensor.view, pf.tensor.view, o.view,
                                                 index);
  }
  py::object call(py::handle logits, py::handle k, py::handle p, py::handle out, std::uint64_t seed,
                  py::handle generator, py::handle stream) const {
    constexpr const char* kOp = "top_k_top_p_sampler";
    Context ctx = make_context(kOp, 0, stream);
    seed = sampler_seed(seed, generator);
    PyTensor x = to_tensor(logits, kOp, "logits");
    SamplerFilter kf, pf;
    read_k(k, kOp, "k", kf);
    read_p(p, kOp, "p", pf);
    PyTensor o = out_of(out, x);
    run_released([&] { (*op_)(x.view, kf.tensor.view, pf.tensor.view, seed, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  static PyTensor out_of(py::handle out, const PyTensor& x) {
    return output(out, x.frontend, sampler_rows(x.view, "top_k_top_p_sampler", "logits"),
                  DataType::kInt64, "top_k_top_p_sampler", "out");
  }

  std::shared_ptr<const ops::TopKTopPSampler> op_;
};

class TopkToppSampling {
 public:
  TopkToppSampling(py::handle probs, py::handle topk, py::handle topp, py::handle out, int index) {
    constexpr const char* kOp = "topk_topp_sampling";
    PyTensor x = to_tensor(probs, kOp, "probs");
    PyTensor o = out_of(out, x);
    op_ = std::make_shared<ops::TopkToppSampling>(x.view, int_arg(topk, kOp, "topk"),
                                                  float_arg(topp, kOp, "topp"), o.view, index);
  }
  py::object call(py::handle probs, py::handle out, std::uint64_t seed, py::handle generator,
                  py::handle stream) const {
    Context ctx = make_context("topk_topp_sampling", 0, stream);
    seed = sampler_seed(seed, generator);
    PyTensor x = to_tensor(probs, "topk_topp_sampling", "probs");
    PyTensor o = out_of(out, x);
    run_released([&] { (*op_)(x.view, seed, o.view, ctx); });
    return result_of(out, o);
  }

 private:
  static PyTensor out_of(py::handle out, const PyTensor& x) {
    return output(out, x.frontend, sampler_rows(x.view, "topk_topp_sampling", "probs"),
                  DataType::kInt32, "topk_topp_sampling", "out");
  }

  std::shared_ptr<const ops::TopkToppSampling> op_;
};

}  // namespace

void bind_kv_classes(py::module_& m) {
  auto none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
  py::class_<RotaryEmbedding>(m, "RotaryEmbedding")
      .def(py::init<py::handle, py::handle, py::handle, std::int64_t, py::handle, bool, py::handle,
                    py::handle, py::handle, int>(),
           py::arg("positions"), py::arg("query"), py::arg("key"), py::arg("head_size"),
           py::arg("cos_sin_cache"), py::arg("is_neox_style") = true, py::arg("rotary_dim") = none,
           py::arg("query_out") = none, py::arg("key_out") = none, py::kw_only(), index)
      .def("__call__", &RotaryEmbedding::call, py::arg("positions"), py::arg("query"),
           py::arg("key"), py::arg("cos_sin_cache"), py::arg("query_out") = none,
           py::arg("key_out") = none, py::kw_only(), stream);
  py::class_<ReshapeAndCache>(m, "ReshapeAndCache")
      .def(py::init<py::handle, py::handle, py::handle, py::handle, py::handle, int>(),
           py::arg("key"), py::arg("value"), py::arg("key_cache"), py::arg("value_cache"),
           py::arg("slot_mapping"), py::kw_only(), index)
      .def("__call__", &ReshapeAndCache::call, py::arg("key"), py::arg("value"),
           py::arg("key_cache"), py::arg("value_cache"), py::arg("slot_mapping"), py::kw_only(),
           stream);
  py::class_<TopKTopPSampler>(m, "TopKTopPSampler")
      .def(py::init<py::handle, py::handle, py::handle, py::handle, int>(), py::arg("logits"),
           py::arg("k") = none, py::arg("p") = none, py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &TopKTopPSampler::call, py::arg("logits"), py::arg("k") = none,
           py::arg("p") = none, py::arg("out") = none, py::kw_only(), py::arg("seed") = 0,
           py::arg("generator") = none, stream);
  py::class_<TopkToppSampling>(m, "TopkToppSampling")
      .def(py::init<py::handle, py::handle, py::handle, py::handle, int>(), py::arg("probs"),
           py::arg("topk") = 0, py::arg("topp") = 1.0, py::arg("out") = none, py::kw_only(), index)
      .def("__call__", &TopkToppSampling::call, py::arg("probs"), py::arg("out") = none,
           py::kw_only(), py::arg("seed") = 0, py::arg("generator") = none, stream);
}

}  // namespace tileops::python
