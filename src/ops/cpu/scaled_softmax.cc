// scaled_softmax on CPU: rows split over the thread pool; each row is read once from memory
// (into float32 scratch unless it already is contiguous float32) and the three softmax passes
// run over it in cache.
#include <algorithm>
#include <memory>

#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/softmax_kernels.h"
#include "src/ops/cpu/streaming.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

class ScaledSoftmaxCpu final : public Operator {
 public:
  explicit ScaledSoftmaxCpu(const Problem& problem)
      : scale_(static_cast<float>(problem.attributes[0])),
        width_(problem.tensors[0].shape.back()) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[0];
    const Tensor& out = tensors[1];
    const RowOffsets input_rows(input);
    const RowOffsets out_rows(out);
    const std::int64_t rows = input_rows.rows();
    if (rows == 0 || width_ == 0) return;

    ThreadPool& pool = ctx.threads();
    const std::int64_t d = width_;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0, sizeof(float) * static_cast<std::size_t>(d * pool.num_threads()));
    const std::int64_t in_stride = input.stride(-1);
    const std::int64_t out_stride = out.stride(-1);
    const bool direct_out = out.dtype() == DataType::kFloat32 && out_stride == 1;
    // Contiguous 16-bit rows convert inside the softmax passes, without a scratch round trip.
    const bool fused_16 = input.dtype() != DataType::kFloat32 && in_stride == 1 && out_stride == 1;
    const std::int64_t next_bytes = d * static_cast<std::int64_t>(input.element_size());
    const bool stream = stream_stores(out);
    const auto rows_of_chunk = [&](int chunk, std::int64_t begin, std::int64_t end) {
      float* scratch = lease.as<float>() + d * chunk;
      for (std::int64_t r = begin; r < end; ++r) {
        // Contiguous rows: the next one is fetched while this one computes.
        const void* next =
            in_stride == 1 && r + 1 < end ? element_at(input, input_rows(r + 1)) : nullptr;
        if (fused_16) {
          softmax_row_16(input.dtype(), element_at(input, input_rows(r)), scale_, d, scratch,
                         element_at(out, out_rows(r)), next, next_bytes, stream);
          continue;
        }
        const float* x =
            row_f32(element_at(input, input_rows(r)), input.dtype(), in_stride, d, scratch);
        void* y = element_at(out, out_rows(r));
        if (direct_out) {
          softmax_row(x, scale_, d, static_cast<float*>(y), next, next_bytes, stream);
        } else {
          softmax_row(x, scale_, d, scratch, next, next_bytes);
          store_f32(scratch, y, out.dtype(), out_stride, d);
        }
      }
    };
    pool.parallel_range(rows, std::max<std::int64_t>(1, 16384 / d), rows_of_chunk);
  }

 private:
  float scale_;
  std::int64_t width_;
};

}  // namespace

void register_scaled_softmax(std::vector<Implementation>& out) {
  out.push_back({"scaled_softmax", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<ScaledSoftmaxCpu>(p); }});
}

}  // namespace tileops::ops::cpu
