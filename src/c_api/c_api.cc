// The C entry points: each converts its descriptors (in parameter order, so the first bad
// argument is the one reported), calls the C++ operator and reports through a status.
#include <string>
#include <vector>

#include "src/c_api/bridge.h"
#include "tileops/c/tileops.h"
#include "tileops/ops.h"
#include "tileops/runtime/thread_pool.h"

using tileops::Tensor;
using tileops::c_api::guarded;
using tileops::c_api::to_context;
using tileops::c_api::to_dtype;
using tileops::c_api::to_tensor;
namespace ops = tileops::ops;

extern "C" {

tileops_status tileops_cat(const tileops_tensor* tensors, size_t num_tensors, int32_t dim,
                           const tileops_tensor* out, const tileops_context* ctx) {
  return guarded([&] {
    if (tensors == nullptr && num_tensors > 0) {
      tileops::throw_argument_error(tileops::ErrorKind::kInvalidArgument, "cat", "tensors",
                                    "an array of " + std::to_string(num_tensors) + " tensors",
                                    "NULL");
    }
    constexpr size_t kMaxTensors = size_t{1} << 20;  // beyond: a garbage count, not a cat
    if (num_tensors > kMaxTensors) {
      tileops::throw_argument_error(tileops::ErrorKind::kInvalidArgument, "cat", "num_tensors",
                                    "at most " + std::to_string(kMaxTensors),
                                    std::to_string(num_tensors));
    }
    std::vector<Tensor> inputs;
    inputs.reserve(num_tensors);
    for (size_t i = 0; i < num_tensors; ++i) {
      inputs.push_back(to_tensor("cat", "tensors[" + std::to_string(i) + "]", &tensors[i]));
    }
    const Tensor y = to_tensor("cat", "out", out);
    ops::cat(inputs, dim, y, to_context(ctx));
  });
}

tileops_status tileops_packed_linear_weight_numel(int64_t n, int64_t k, int32_t dtype,
                                                  int64_t* numel) {
  return guarded([&] {
    constexpr std::string_view kOp = "packed_linear_weight_numel";
    if (numel == nullptr) {
      tileops::throw_argument_error(tileops::ErrorKind::kInvalidArgument, kOp, "numel", "a pointer",
                                    "NULL");
    }
    *numel = ops::packed_linear_weight_numel(n, k, to_dtype(kOp, "dtype", dtype));
  });
}

tileops_status tileops_linear_packing_pays(int32_t dtype, int32_t* pays) {
  return guarded([&] {
    constexpr std::string_view kOp = "linear_packing_pays";
    if (pays == nullptr) {
      tileops::throw_argument_error(tileops::ErrorKind::kInvalidArgument, kOp, "pays", "a pointer",
                                    "NULL");
    }
    *pays = ops::linear_packing_pays(to_dtype(kOp, "dtype", dtype)) ? 1 : 0;
  });
}

tileops_status tileops_quantized_weight_bytes(int64_t n, int64_t k, int32_t bits,
                                              int32_t group_size, int32_t symmetric,
                                              int64_t* bytes) {
  return guarded([&] {
    if (bytes == nullptr) {
      tileops::throw_argument_error(tileops::ErrorKind::kInvalidArgument, "quantized_weight_bytes",
                                    "bytes", "a pointer", "NULL");
    }
    *bytes = ops::quantized_weight_bytes(n, k, bits, group_size, symmetric != 0);
  });
}

tileops_status tileops_add_rms_norm(const tileops_tensor* input, const tileops_tensor* residual,
                                    const tileops_tensor* weight, double eps,
                                    const tileops_tensor* out, const tileops_tensor* residual_out,
                                    const tileops_context* ctx) {
  return guarded([&] {
    const Tensor x = to_tensor("add_rms_norm", "input", input);
    const Tensor r = to_tensor("add_rms_norm", "residual", residual);
    const Tensor w = to_tensor("add_rms_norm", "weight", weight);
    if (out == nullptr && residual_out == nullptr) {
      ops::add_rms_norm_inplace(x, r, w, eps, to_context(ctx));
      return;
    }
    // One output given without the other is neither form: name the missing one.
    const char* missing = out == nullptr ? "out" : "residual_out";
    if (out == nullptr || residual_out == nullptr) {
      tileops::throw_argument_error(
          tileops::ErrorKind::kInvalidArgument, "add_rms_norm", missing,
          "a tensor (or NULL out and residual_out together, for the in-place form)", "NULL");
    }
    const Tensor y = to_tensor("add_rms_norm", "out", out);
    const Tensor r_out = to_tensor("add_rms_norm", "residual_out", residual_out);
    ops::add_rms_norm(x, r, w, eps, y, r_out, to_context(ctx));
  });
}

tileops_status tileops_clear_cache(void) {
  return guarded([] { ops::clear_cache(); });
}

tileops_status tileops_set_num_threads(int32_t num_threads) {
  return guarded([&] {
    constexpr int kMaxThreads = tileops::ThreadPool::kMaxThreads;
    if (num_threads < 1 || num_threads > kMaxThreads) {
      tileops::throw_argument_error(
          tileops::ErrorKind::kInvalidArgument, "set_num_threads", "num_threads",
          "a count in [1, " + std::to_string(kMaxThreads) + "]", std::to_string(num_threads));
    }
    tileops::ThreadPool::set_global_num_threads(num_threads);
  });
}

}  // extern "C"
