// rms_norm on CPU: rows split over the thread pool. A contiguous row is read from memory once
// (the second pass finds it in cache) and converted on the fly in both passes; a strided row is
// first gathered into float32 scratch.
#include <algorithm>
#include <cmath>
#include <memory>

#include "src/ops/contracts/rms_norm.decl.h"
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

// Argument positions, by name from the declaration (src/ops/contracts/rms_norm.decl.h).
constexpr int kInput = tensor_index(decls::rms_norm, "input");
constexpr int kWeight = tensor_index(decls::rms_norm, "weight");
constexpr int kOut = tensor_index(decls::rms_norm, "out");
constexpr int kEps = attribute_index(decls::rms_norm, "eps");

class RmsNormCpu final : public Operator {
 public:
  explicit RmsNormCpu(const Problem& problem)
      : eps_(static_cast<float>(problem.attributes[kEps])),
        width_(problem.tensors[kInput].shape.back()) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[kInput];
    const Tensor& weight = tensors[kWeight];
    const Tensor& out = tensors[kOut];
    const RowOffsets input_rows(input);
    const RowOffsets out_rows(out);
    const std::int64_t rows = input_rows.rows();
    if (rows == 0 || width_ == 0) return;

    ThreadPool& pool = ctx.threads();
    const std::int64_t d = width_;
    // Scratch: the float32 weight, then one row per chunk.
    WorkspacePool::Lease lease =
        ctx.workspace().acquire(kCpu, ctx.stream, 0,
                                workspace_bytes({{d, 1 + pool.num_threads()}}, sizeof(float),
                                                "rms_norm: argument 'input': its workspace"));
    float* w = lease.as<float>();
    load_f32(weight.data(), weight.dtype(), weight.stride(0), d, w);

    const std::int64_t in_stride = input.stride(-1);
    const std::int64_t out_stride = out.stride(-1);
    const DataType dtype = input.dtype();
    if (in_stride == 1 && out_stride == 1) {
      // Contiguous rows: two fused passes straight over the row, no scratch.
      const bool stream = stream_stores(out, 2);  // input and out
      // The scratch rows after w are unused here: the first holds w as the row kernel reads it.
      float* const row_weight = w + d;
      arrange_row_weight(dtype, w, d, row_weight);
      const std::int64_t next_bytes = d * static_cast<std::int64_t>(input.element_size());
      pool.parallel_range(
          rows, std::max<std::int64_t>(1, 16384 / d),
          [&](int, std::int64_t begin, std::int64_t end) {
            for (std::int64_t r = begin; r < end; ++r) {
              const void* x = element_at(input, input_rows(r));
              const float mean = row_sum_of_squares(x, dtype, d) / static_cast<float>(d);
              const float scale = 1.0f / std::sqrt(mean + eps_);
              const void* next = r + 1 < end ? element_at(input, input_rows(r + 1)) : nullptr;
              scale_row_by_weight(x, row_weight, scale, dtype, d, element_at(out, out_rows(r)),
                                  stream, next, next_bytes);
            }
          });
      return;
    }
    pool.parallel_range(rows, std::max<std::int64_t>(1, 16384 / d),
                        [&](int chunk, std::int64_t begin, std::int64_t end) {
                          float* scratch = w + d * (1 + chunk);
                          for (std::int64_t r = begin; r < end; ++r) {
                            const float* x = row_f32(element_at(input, input_rows(r)), dtype,
                                                     in_stride, d, scratch);
                            const float mean = sum_of_squares(x, d) / static_cast<float>(d);
                            const float scale = 1.0f / std::sqrt(mean + eps_);
                            void* y = element_at(out, out_rows(r));
                            if (dtype == DataType::kFloat32 && out_stride == 1) {
                              scale_by_weight(x, w, scale, d, static_cast<float*>(y));
                            } else {
                              scale_by_weight(x, w, scale, d, scratch);
                              store_f32(scratch, y, dtype, out_stride, d);
                            }
                          }
                        });
  }

 private:
  float eps_;
  std::int64_t width_;
};

}  // namespace

void register_rms_norm(std::vector<Implementation>& out) {
  out.push_back({"rms_norm", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<RmsNormCpu>(p); }});
}

}  // namespace tileops::ops::cpu
