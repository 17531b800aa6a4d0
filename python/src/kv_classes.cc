// tileops._C.ops class forms of the samplers (the other KV-cache and rotary class forms are
// generated): the constructor takes the free function's arguments and specialises the operator
// once for that geometry (an omitted output is a contiguous [B]); __call__ runs it on new data.
#include <memory>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

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
