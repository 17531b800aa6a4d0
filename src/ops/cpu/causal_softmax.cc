// causal_softmax on CPU: each row reads only its visible prefix, runs the row softmax over it
// and writes zeros over the masked suffix. Rows are visited in zig-zag order (first, last,
// second, second-to-last, ...) so the contiguous chunks of the thread pool get equal work.
#include <algorithm>
#include <cstring>
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

// dst[i * stride] = +0 for i in [0, n); +0 is all-zero bits in every float dtype.
void store_zeros(char* dst, std::size_t element_size, std::int64_t stride, std::int64_t n,
                 bool stream) {
  if (n <= 0) return;
  if (stride == 1) {
    zero_bytes(dst, element_size * static_cast<std::size_t>(n), stream);
    return;
  }
  const std::int64_t step = stride * static_cast<std::int64_t>(element_size);
  for (std::int64_t i = 0; i < n; ++i) std::memset(dst + i * step, 0, element_size);
}

class CausalSoftmaxCpu final : public Operator {
 public:
  explicit CausalSoftmaxCpu(const Problem& problem)
      : queries_(problem.tensors[0].shape[problem.tensors[0].shape.size() - 2]),
        keys_(problem.tensors[0].shape.back()) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& input = tensors[0];
    const Tensor& out = tensors[1];
    const RowOffsets input_rows(input);
    const RowOffsets out_rows(out);
    const std::int64_t rows = input_rows.rows();
    if (rows == 0 || keys_ == 0) return;

    ThreadPool& pool = ctx.threads();
    const std::int64_t t = keys_;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0, sizeof(float) * static_cast<std::size_t>(t * pool.num_threads()));
    const std::int64_t in_stride = input.stride(-1);
    const std::int64_t out_stride = out.stride(-1);
    const bool direct_out = out.dtype() == DataType::kFloat32 && out_stride == 1;
    // Contiguous 16-bit rows convert inside the softmax passes, without a scratch round trip.
    const bool fused_16 = input.dtype() != DataType::kFloat32 && in_stride == 1 && out_stride == 1;
    const std::int64_t in_size = static_cast<std::int64_t>(input.element_size());
    const std::int64_t out_size = static_cast<std::int64_t>(out.element_size());
    const auto row_of = [rows](std::int64_t k) { return k % 2 == 0 ? k / 2 : rows - 1 - k / 2; };
    // Row i of the S query rows sees keys [0, T - S + i]; T >= S makes that non-empty.
    const auto visible_of = [&](std::int64_t r) { return t - queries_ + r % queries_ + 1; };
    const bool stream = stream_stores(out);
    const auto rows_of_chunk = [&](int chunk, std::int64_t begin, std::int64_t end) {
      float* scratch = lease.as<float>() + t * chunk;
      for (std::int64_t k = begin; k < end; ++k) {
        const std::int64_t r = row_of(k);
        const std::int64_t visible = visible_of(r);
        char* y = element_at(out, out_rows(r));
        // Contiguous rows: the next one is fetched while this one computes.
        const void* next = nullptr;
        std::int64_t next_bytes = 0;
        if (in_stride == 1 && k + 1 < end) {
          next = element_at(input, input_rows(row_of(k + 1)));
          next_bytes = visible_of(row_of(k + 1)) * in_size;
        }
        const char* x_row = element_at(input, input_rows(r));
        if (fused_16) {
          softmax_row_16(input.dtype(), x_row, 1.0f, visible, scratch, y, next, next_bytes, stream);
        } else {
          const float* x = row_f32(x_row, input.dtype(), in_stride, visible, scratch);
          if (direct_out) {
            softmax_row(x, 1.0f, visible, reinterpret_cast<float*>(y), next, next_bytes, stream);
          } else {
            softmax_row(x, 1.0f, visible, scratch, next, next_bytes);
            store_f32(scratch, y, out.dtype(), out_stride, visible);
          }
        }
        store_zeros(y + visible * out_stride * out_size, out.element_size(), out_stride,
                    t - visible, stream);
      }
    };
    pool.parallel_range(rows, std::max<std::int64_t>(1, 16384 / t), rows_of_chunk);
  }

 private:
  std::int64_t queries_;  // S
  std::int64_t keys_;     // T
};

}  // namespace

void register_causal_softmax(std::vector<Implementation>& out) {
  out.push_back({"causal_softmax", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<CausalSoftmaxCpu>(p); }});
}

}  // namespace tileops::ops::cpu
