// tileops._C.ops: flash-attn's mha_varlen_fwd / mha_fwd_kvcache argument lists as thin adapters
// over flash_attention (whose bindings, like paged_attention's, are generated). An omitted out is
// allocated like q.
#include <memory>
#include <optional>
#include <vector>

#include "python/src/errors.h"
#include "python/src/ops_bindings.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/core/tensor_storage.h"
#include "tileops/ops.h"

namespace tileops::python {
namespace {

struct Optional {
  std::optional<PyTensor> tensor;
  Tensor view() const { return tensor ? tensor->view : Tensor(); }
};

Optional optional_tensor(py::handle obj, std::string_view op, std::string_view arg) {
  Optional o;
  if (!obj.is_none()) o.tensor = to_tensor(obj, op, arg);
  return o;
}

void unsupported(std::string_view op, std::string_view arg, bool given) {
  if (given) {
    throw Error(ErrorKind::kUnsupported, std::string(op) + ": argument '" + std::string(arg) +
                                             "' is not supported by tileops (leave it unset)");
  }
}

// flash-attn's varlen_fwd argument list; returns out.
py::object mha_varlen_fwd(py::handle q, py::handle k, py::handle v, py::handle out,
                          py::handle cu_seqlens_q, py::handle cu_seqlens_k, py::handle seqused_k,
                          py::handle leftpad_k, py::handle block_table, py::handle alibi_slopes,
                          std::int64_t max_seqlen_q, std::int64_t max_seqlen_k, double p_dropout,
                          py::handle softmax_scale, bool /*zero_tensors*/, bool is_causal,
                          std::int64_t window_size_left, std::int64_t window_size_right,
                          double softcap, bool return_softmax, py::handle /*gen*/, int index,
                          py::handle stream) {
  constexpr std::string_view kOp = "mha_varlen_fwd";
  unsupported(kOp, "seqused_k", !seqused_k.is_none());
  unsupported(kOp, "leftpad_k", !leftpad_k.is_none());
  unsupported(kOp, "alibi_slopes", !alibi_slopes.is_none());
  unsupported(kOp, "p_dropout", p_dropout != 0.0);
  unsupported(kOp, "softcap", softcap != 0.0);
  unsupported(kOp, "return_softmax", return_softmax);
  Context ctx = make_context(kOp, index, stream);
  PyTensor qt = to_tensor(q, kOp, "q"), kt = to_tensor(k, kOp, "k"), vt = to_tensor(v, kOp, "v");
  Optional cq = optional_tensor(cu_seqlens_q, kOp, "cu_seqlens_q");
  Optional ck = optional_tensor(cu_seqlens_k, kOp, "cu_seqlens_k");
  Optional table = optional_tensor(block_table, kOp, "block_table");
  PyTensor o = output(out, qt.frontend, qt.view.shape(), qt.view.dtype(), kOp, "out");
  const double scale =
      softmax_scale.is_none() ? 0.0 : float_arg(softmax_scale, kOp, "softmax_scale");
  run_released([&] {
    ops::mha_varlen_fwd(qt.view, kt.view, vt.view, o.view, cq.view(), ck.view(), table.view(),
                        max_seqlen_q, max_seqlen_k, scale, is_causal, window_size_left,
                        window_size_right, ctx);
  });
  return result_of(out, o);
}

// flash-attn's fwd_kvcache argument list for an existing cache (no appended k/v, no rotary);
// without block_table the cache is [B, Sk, Hkv, D], read as one block per sequence.
py::object mha_fwd_kvcache(py::handle q, py::handle kcache, py::handle vcache, py::handle k,
                           py::handle v, py::handle seqlens_k, py::handle rotary_cos,
                           py::handle rotary_sin, py::handle cache_batch_idx, py::handle leftpad_k,
                           py::handle block_table, py::handle alibi_slopes, py::handle out,
                           py::handle softmax_scale, bool is_causal, std::int64_t window_size_left,
                           std::int64_t window_size_right, double softcap,
                           bool /*is_rotary_interleaved*/, std::int64_t /*num_splits*/, int index,
                           py::handle stream) {
  constexpr std::string_view kOp = "mha_fwd_kvcache";
  unsupported(kOp, "k", !k.is_none());
  unsupported(kOp, "v", !v.is_none());
  unsupported(kOp, "rotary_cos", !rotary_cos.is_none() || !rotary_sin.is_none());
  unsupported(kOp, "cache_batch_idx", !cache_batch_idx.is_none());
  unsupported(kOp, "leftpad_k", !leftpad_k.is_none());
  unsupported(kOp, "alibi_slopes", !alibi_slopes.is_none());
  unsupported(kOp, "softcap", softcap != 0.0);
  Context ctx = make_context(kOp, index, stream);
  PyTensor qt = to_tensor(q, kOp, "q");
  PyTensor kc = to_tensor(kcache, kOp, "kcache"), vc = to_tensor(vcache, kOp, "vcache");
  if (qt.view.rank() != 4 || kc.view.rank() != 4) {
    throw_argument_error(ErrorKind::kInvalidArgument, kOp, qt.view.rank() != 4 ? "q" : "kcache",
                         "rank 4", (qt.view.rank() != 4 ? qt.view : kc.view).describe());
  }
  const std::int64_t batch = qt.view.size(0);
  Optional table = optional_tensor(block_table, kOp, "block_table");
  Optional lens = optional_tensor(seqlens_k, kOp, "seqlens_k");
  // Without a block table: sequence b is block b of a cache with block_size = Sk.
  TensorStorage own_table, own_lens;
  if (!table.tensor) {
    own_table = TensorStorage(Dims{batch, 1}, DataType::kInt32);
    for (std::int64_t b = 0; b < batch; ++b) own_table.view().data_as<std::int32_t>()[b] = b;
  }
  if (!lens.tensor) {
    own_lens = TensorStorage(Dims{batch}, DataType::kInt32);
    const std::int64_t capacity = checked_mul(
        kc.view.size(1), table.tensor ? table.tensor->view.size(-1) : 1, "mha_fwd_kvcache: kcache");
    if (capacity > INT32_MAX) {
      throw_argument_error(ErrorKind::kInvalidArgument, kOp, "kcache",
                           "a cache of at most 2^31 - 1 positions per sequence (or seqlens_k)",
                           std::to_string(capacity) + " positions");
    }
    for (std::int64_t b = 0; b < batch; ++b) {
      own_lens.view().data_as<std::int32_t>()[b] = static_cast<std::int32_t>(capacity);
    }
  }
  PyTensor o = output(out, qt.frontend, qt.view.shape(), qt.view.dtype(), kOp, "out");
  const double scale =
      softmax_scale.is_none() ? 0.0 : float_arg(softmax_scale, kOp, "softmax_scale");
  run_released([&] {
    ops::mha_fwd_kvcache(qt.view, kc.view, vc.view, lens.tensor ? lens.view() : own_lens.view(),
                         table.tensor ? table.view() : own_table.view(), o.view, scale, is_causal,
                         window_size_left, window_size_right, ctx);
  });
  return result_of(out, o);
}

}  // namespace

void bind_attention_ops(py::module_& m) {
  const py::object none = py::none();
  auto index = py::arg("implementation_index") = 0;
  auto stream = py::arg("stream") = none;
  m.def("mha_varlen_fwd", &mha_varlen_fwd, "flash-attn's varlen_fwd over flash_attention.",
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("out") = none,
        py::arg("cu_seqlens_q") = none, py::arg("cu_seqlens_k") = none, py::arg("seqused_k") = none,
        py::arg("leftpad_k") = none, py::arg("block_table") = none, py::arg("alibi_slopes") = none,
        py::arg("max_seqlen_q") = 0, py::arg("max_seqlen_k") = 0, py::arg("p_dropout") = 0.0,
        py::arg("softmax_scale") = none, py::arg("zero_tensors") = false,
        py::arg("is_causal") = false, py::arg("window_size_left") = -1,
        py::arg("window_size_right") = -1, py::arg("softcap") = 0.0,
        py::arg("return_softmax") = false, py::arg("gen") = none, py::kw_only(), index, stream);
  m.def("mha_fwd_kvcache", &mha_fwd_kvcache, "flash-attn's fwd_kvcache over flash_attention.",
        py::arg("q"), py::arg("kcache"), py::arg("vcache"), py::arg("k") = none,
        py::arg("v") = none, py::arg("seqlens_k") = none, py::arg("rotary_cos") = none,
        py::arg("rotary_sin") = none, py::arg("cache_batch_idx") = none,
        py::arg("leftpad_k") = none, py::arg("block_table") = none, py::arg("alibi_slopes") = none,
        py::arg("out") = none, py::arg("softmax_scale") = none, py::arg("is_causal") = false,
        py::arg("window_size_left") = -1, py::arg("window_size_right") = -1,
        py::arg("softcap") = 0.0, py::arg("is_rotary_interleaved") = true,
        py::arg("num_splits") = 0, py::kw_only(), index, stream);
}

}  // namespace tileops::python
