#include "src/ops/cpu/elementwise_float.h"

#include <algorithm>

#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/streaming.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// A float32 view of n elements at src: src itself when contiguous float32, else scratch filled
// by a conversion, a gather, or (stride 0) one value repeated.
const float* stage(const char* src, DataType dtype, std::int64_t stride, std::int64_t n,
                   float* scratch) {
  if (stride == 0) {
    float value;
    load_f32(src, dtype, 1, 1, &value);
    std::fill_n(scratch, n, value);
    return scratch;
  }
  return row_f32(src, dtype, stride, n, scratch);
}

}  // namespace

void run_float_elementwise(const ElementwiseLoop& loop, ElementwiseOp op, DataType dtype,
                           const void* a, const void* b, const Tensor& out, const Context& ctx) {
  const std::int64_t sa = loop.inner_stride(0);
  const std::int64_t sb = loop.inner_stride(1);
  const std::int64_t so = loop.inner_stride(2);
  const std::int64_t size = static_cast<std::int64_t>(size_of(dtype));
  const char* a_bytes = static_cast<const char*>(a);
  const char* b_bytes = static_cast<const char*>(b);
  char* out_bytes = static_cast<char*>(out.data());
  ThreadPool& pool = ctx.threads();

  if (sa == 1 && sb == 1 && so == 1) {
    const bool stream = stream_stores(out, 3);  // a, b and out, all of out's size here
    // Rows are visited in order within a thread's chunk, so the next row is the one to fetch.
    const std::int64_t next_row_bytes =
        op == ElementwiseOp::kSwigluOfHalves && loop.row_stride(0) == loop.row_stride(1)
            ? loop.row_stride(0) * size
            : 0;
    loop.run(pool, [&](int, const std::int64_t* offsets, std::int64_t n) {
      elementwise_rows(op, dtype, a_bytes + offsets[0] * size, b_bytes + offsets[1] * size, n,
                       out_bytes + offsets[2] * size, stream, next_row_bytes);
    });
    return;
  }

  run_staged_float(loop, dtype, a, b, out, ctx,
                   [op](const float* x, const float* y, std::int64_t n, float* result) {
                     elementwise_rows(op, DataType::kFloat32, x, y, n, result);
                   });
}

void run_staged_float(const ElementwiseLoop& loop, DataType dtype, const void* a, const void* b,
                      const Tensor& out, const Context& ctx, const FloatBlockFn& compute) {
  if (loop.inner_extent() == 0 || out.numel() == 0) return;  // an empty tensor
  const std::int64_t sa = loop.inner_stride(0);
  const std::int64_t sb = loop.inner_stride(1);
  const std::int64_t so = loop.inner_stride(2);
  const std::int64_t size = static_cast<std::int64_t>(size_of(dtype));
  const char* a_bytes = static_cast<const char*>(a);
  const char* b_bytes = static_cast<const char*>(b);
  char* out_bytes = static_cast<char*>(out.data());
  ThreadPool& pool = ctx.threads();
  // Per thread: one float32 block of each operand.
  const std::int64_t block = std::min(loop.inner_extent(), ElementwiseLoop::kBlock);
  const std::size_t per_thread = static_cast<std::size_t>(3 * block);
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      sizeof(float) * per_thread * static_cast<std::size_t>(pool.num_threads()));
  float* scratch = lease.as<float>();
  const bool direct_out = dtype == DataType::kFloat32 && so == 1;
  loop.run(pool, [&](int chunk, const std::int64_t* offsets, std::int64_t n) {
    float* s = scratch + per_thread * static_cast<std::size_t>(chunk);
    const float* x = stage(a_bytes + offsets[0] * size, dtype, sa, n, s);
    const float* y =
        b_bytes == nullptr ? nullptr : stage(b_bytes + offsets[1] * size, dtype, sb, n, s + block);
    void* dst = out_bytes + offsets[2] * size;
    float* result = direct_out ? static_cast<float*>(dst) : s + 2 * block;
    compute(x, y, n, result);
    if (!direct_out) store_f32(result, dst, dtype, so, n);
  });
}

}  // namespace tileops::ops::cpu
