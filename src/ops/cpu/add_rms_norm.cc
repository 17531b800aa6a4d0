// add_rms_norm on CPU: rows split over the thread pool; each row of input and residual is read
// once from memory, the sum is written to residual_out and the normalised row to out. A row is
// read completely before anything of it is written, so out may be input and residual_out may
// be residual (the in-place form).
#include <algorithm>
#include <cmath>
#include <memory>

#include "src/ops/contracts/add_rms_norm.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/norm_kernels.h"
#include "src/ops/cpu/streaming.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/add_rms_norm.decl.h).
constexpr int kInput = tensor_index(decls::add_rms_norm, "input");
constexpr int kResidual = tensor_index(decls::add_rms_norm, "residual");
constexpr int kWeight = tensor_index(decls::add_rms_norm, "weight");
constexpr int kOut = tensor_index(decls::add_rms_norm, "out");
constexpr int kResidualOut = tensor_index(decls::add_rms_norm, "residual_out");
constexpr int kEps = attribute_index(decls::add_rms_norm, "eps");

class AddRmsNormCpu final : public Operator {
 public:
  explicit AddRmsNormCpu(const Problem& problem)
      : eps_(static_cast<float>(problem.attributes[kEps])),
        width_(problem.tensors[kInput].shape.back()) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[kInput];
    const Tensor& residual = tensors[kResidual];
    const Tensor& weight = tensors[kWeight];
    const Tensor& out = tensors[kOut];
    const Tensor& residual_out = tensors[kResidualOut];
    const RowOffsets input_rows(input);
    const RowOffsets residual_rows(residual);
    const RowOffsets out_rows(out);
    const RowOffsets sum_rows(residual_out);
    const std::int64_t rows = input_rows.rows();
    if (rows == 0 || width_ == 0) return;

    ThreadPool& pool = ctx.threads();
    const std::int64_t d = width_;
    const DataType dtype = input.dtype();
    // Scratch: the float32 weight, then three rows (input, residual, sum) per chunk.
    WorkspacePool::Lease lease =
        ctx.workspace().acquire(kCpu, ctx.stream, 0,
                                workspace_bytes({{d, 1 + 3 * pool.num_threads()}}, sizeof(float),
                                                "add_rms_norm: argument 'input': its workspace"));
    float* w = lease.as<float>();
    load_f32(weight.data(), weight.dtype(), weight.stride(0), d, w);

    const std::int64_t in_stride = input.stride(-1);
    const std::int64_t res_stride = residual.stride(-1);
    const std::int64_t out_stride = out.stride(-1);
    const std::int64_t sum_stride = residual_out.stride(-1);
    const bool f32 = dtype == DataType::kFloat32;
    if (in_stride == 1 && res_stride == 1 && out_stride == 1 && sum_stride == 1) {
      // Contiguous rows: one pass adds, rounds, stores residual_out and sums the squares of
      // what it stored; the second normalises residual_out (in cache) into out. No scratch.
      const bool stream = stream_stores(out, 4);  // input, residual and both outputs
      // The scratch rows after w are unused here: the first holds w as the row kernel reads it.
      float* const row_weight = w + d;
      arrange_row_weight(dtype, w, d, row_weight);
      const std::int64_t next_bytes = d * static_cast<std::int64_t>(input.element_size());
      const auto contiguous_rows = [&](int, std::int64_t begin, std::int64_t end) {
        for (std::int64_t r = begin; r < end; ++r) {
          void* sum = element_at(residual_out, sum_rows(r));
          const float mean =
              add_rows_sum_of_squares(element_at(input, input_rows(r)),
                                      element_at(residual, residual_rows(r)), dtype, d, sum) /
              static_cast<float>(d);
          const float scale = 1.0f / std::sqrt(mean + eps_);
          // The next input row is fetched during the cached pass (the hardware prefetcher keeps
          // up with the residual stream alone).
          const void* next = r + 1 < end ? element_at(input, input_rows(r + 1)) : nullptr;
          scale_row_by_weight(sum, row_weight, scale, dtype, d, element_at(out, out_rows(r)),
                              stream, next, next_bytes);
        }
      };
      pool.parallel_range(rows, std::max<std::int64_t>(1, 16384 / d), contiguous_rows);
      return;
    }
    const auto rows_of_chunk = [&](int chunk, std::int64_t begin, std::int64_t end) {
      float* a = w + d * (1 + 3 * chunk);
      float* b = a + d;
      float* s = b + d;
      for (std::int64_t r = begin; r < end; ++r) {
        const float* x = row_f32(element_at(input, input_rows(r)), dtype, in_stride, d, a);
        const float* y = row_f32(element_at(residual, residual_rows(r)), dtype, res_stride, d, b);
        void* sum_row = element_at(residual_out, sum_rows(r));
        // A contiguous float32 residual_out takes the sum directly; the normalisation then
        // reads it back from cache.
        float* sum = f32 && sum_stride == 1 ? static_cast<float*>(sum_row) : s;
        add_rows(x, y, d, sum);
        if (sum != sum_row) {
          store_f32(sum, sum_row, dtype, sum_stride, d);
          // out is computed from the sum rounded to the dtype, as stored.
          if (!f32) load_f32(sum_row, dtype, sum_stride, d, sum);
        }
        const float mean = sum_of_squares(sum, d) / static_cast<float>(d);
        const float scale = 1.0f / std::sqrt(mean + eps_);
        void* z = element_at(out, out_rows(r));
        if (f32 && out_stride == 1) {
          scale_by_weight(sum, w, scale, d, static_cast<float*>(z));
        } else {
          scale_by_weight(sum, w, scale, d, s);
          store_f32(s, z, dtype, out_stride, d);
        }
      }
    };
    pool.parallel_range(rows, std::max<std::int64_t>(1, 16384 / d), rows_of_chunk);
  }

 private:
  float eps_;
  std::int64_t width_;
};

}  // namespace

void register_add_rms_norm(std::vector<Implementation>& out) {
  out.push_back({"add_rms_norm", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<AddRmsNormCpu>(p); }});
}

}  // namespace tileops::ops::cpu
