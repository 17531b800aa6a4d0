#include "src/ops/cpu/softmax_rows.h"

#include <algorithm>
#include <cstring>

#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/softmax_kernels.h"
#include "src/ops/cpu/simd/softmax_pipeline_kernels.h"
#include "src/ops/cpu/streaming.h"
#include "src/ops/framework/workspace_bytes.h"
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

}  // namespace

void run_softmax_rows(const Tensor& input, const Tensor& out, float scale,
                      FunctionRef<std::int64_t(std::int64_t)> visible, RowOrder order,
                      const Context& ctx) {
  const RowOffsets input_rows(input);
  const RowOffsets out_rows(out);
  const std::int64_t rows = input_rows.rows();
  const std::int64_t width = input.shape().back();  // rank >= 1 (contracts)
  if (rows == 0 || width == 0) return;

  ThreadPool& pool = ctx.threads();
  WorkspacePool::Lease lease =
      ctx.workspace().acquire(kCpu, ctx.stream, 0,
                              workspace_bytes({{2, width, pool.num_threads()}}, sizeof(float),
                                              "softmax: argument 'input': its workspace"));
  const std::int64_t in_stride = input.stride(-1);
  const std::int64_t out_stride = out.stride(-1);
  const bool direct_out = out.dtype() == DataType::kFloat32 && out_stride == 1;
  // Contiguous rows are pipelined in runs of up to kRun rows (softmax_pipeline_kernels.h); 16-bit
  // ones convert inside the softmax passes, without a scratch round trip.
  constexpr std::int64_t kRun = 32;
  const bool pipelined = in_stride == 1 && out_stride == 1;
  const std::int64_t in_size = static_cast<std::int64_t>(input.element_size());
  const std::int64_t out_size = static_cast<std::int64_t>(out.element_size());
  const bool stream = stream_stores(out, 2);  // input and out
  const auto row_of = [&](std::int64_t k) {
    if (order == RowOrder::kSequential) return k;
    return k % 2 == 0 ? k / 2 : rows - 1 - k / 2;
  };
  const auto zeros_after = [&](char* y, std::int64_t n) {
    store_zeros(y + n * out_stride * out_size, out.element_size(), out_stride, width - n, stream);
  };
  const auto rows_of_chunk = [&](int chunk, std::int64_t begin, std::int64_t end) {
    float* scratch = lease.as<float>() + 2 * width * chunk;
    if (pipelined) {
      PipelinedRow run[kRun];
      std::int64_t run_rows[kRun];
      for (std::int64_t k = begin; k < end; k += kRun) {
        const std::int64_t count = std::min(kRun, end - k);
        for (std::int64_t j = 0; j < count; ++j) run_rows[j] = row_of(k + j);
        // In memory order: neighbours in a run then have similar lengths (zig-zag order
        // alternates short and long rows), which the pipeline wants.
        std::sort(run_rows, run_rows + count);
        for (std::int64_t j = 0; j < count; ++j) {
          const std::int64_t r = run_rows[j];
          run[j] = {element_at(input, input_rows(r)), element_at(out, out_rows(r)), visible(r)};
        }
        softmax_rows_pipelined(input.dtype(), run, count, scale, scratch, stream);
        for (std::int64_t j = 0; j < count; ++j) {
          zeros_after(static_cast<char*>(run[j].y), run[j].n);
        }
      }
      return;
    }
    for (std::int64_t k = begin; k < end; ++k) {
      const std::int64_t r = row_of(k);
      const std::int64_t n = visible(r);
      char* y = element_at(out, out_rows(r));
      // Contiguous rows: the next one is fetched while this one computes.
      const void* next = nullptr;
      std::int64_t next_bytes = 0;
      if (in_stride == 1 && k + 1 < end) {
        next = element_at(input, input_rows(row_of(k + 1)));
        next_bytes = visible(row_of(k + 1)) * in_size;
      }
      const float* x =
          row_f32(element_at(input, input_rows(r)), input.dtype(), in_stride, n, scratch);
      if (direct_out) {
        softmax_row(x, scale, n, reinterpret_cast<float*>(y), next, next_bytes, stream);
      } else {
        softmax_row(x, scale, n, scratch, next, next_bytes);
        store_f32(scratch, y, out.dtype(), out_stride, n);
      }
      zeros_after(y, n);
    }
  };
  pool.parallel_range(rows, std::max<std::int64_t>(1, 16384 / width), rows_of_chunk);
}

}  // namespace tileops::ops::cpu
