#include "src/ops/cpu/gemm/batched_gemm.h"

#include "src/ops/framework/broadcast.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

MatrixRef matrix_of(const Tensor& t, bool transposed) {
  MatrixRef ref{t.data(), t.dtype(), t.stride(-2), t.stride(-1)};
  if (transposed) std::swap(ref.row_stride, ref.col_stride);
  return ref;
}

Dims batch_dims(const Dims& shape) {
  Dims out;
  for (int i = 0; i + 2 < shape.size(); ++i) out.push_back(shape[i]);
  return out;
}

// True when the batch dims of t step exactly like extra rows (dims -3.. fold into dim -2).
bool folds_into_rows(const Tensor& t) {
  for (int i = t.rank() - 3; i >= 0; --i) {
    if (t.stride(i) != t.stride(i + 1) * t.size(i + 1)) return false;
  }
  return true;
}

}  // namespace

BatchedGemm make_batched_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                              const Tensor& c) {
  BatchedGemm g;
  g.call.m = c.size(-2);
  g.call.n = c.size(-1);
  g.call.k = trans_a ? a.size(-2) : a.size(-1);
  g.call.a = matrix_of(a, trans_a);
  g.call.b = matrix_of(b, trans_b);
  g.call.c = matrix_of(c, false);

  const Dims batch = batch_dims(c.shape());
  const Dims a_strides = broadcast_strides(batch_dims(a.shape()), batch_dims(a.strides()), batch);
  const Dims b_strides = broadcast_strides(batch_dims(b.shape()), batch_dims(b.strides()), batch);
  const Dims c_strides = batch_dims(c.strides());
  const std::int64_t count = batch.product();

  bool b_shared = true;
  for (int i = 0; i < batch.size(); ++i)
    b_shared = b_shared && (b_strides[i] == 0 || batch[i] == 1);
  const bool a_full = batch_dims(a.shape()) == batch;
  if (count > 1 && b_shared && !trans_a && a_full && folds_into_rows(a) && folds_into_rows(c)) {
    g.call.m *= count;  // one tall GEMM against the shared B
    g.a_offsets = g.b_offsets = g.c_offsets = {0};
    return g;
  }
  g.a_offsets.reserve(count);
  g.b_offsets.reserve(count);
  g.c_offsets.reserve(count);
  for (std::int64_t index = 0; index < count; ++index) {
    std::int64_t rest = index, ao = 0, bo = 0, co = 0;
    for (int i = batch.size() - 1; i >= 0; --i) {
      const std::int64_t coord = rest % batch[i];
      rest /= batch[i];
      ao += coord * a_strides[i];
      bo += coord * b_strides[i];
      co += coord * c_strides[i];
    }
    g.a_offsets.push_back(ao);
    g.b_offsets.push_back(bo);
    g.c_offsets.push_back(co);
  }
  return g;
}

void run_batched_gemm(GemmEngine engine, bool parallel_batches, const BatchedGemm& gemm,
                      const Context& ctx) {
  const auto batch_call = [&](std::int64_t i) {
    GemmCall call = gemm.call;
    auto shift = [](MatrixRef& ref, std::int64_t offset) {
      ref.data = static_cast<const char*>(ref.data) +
                 offset * static_cast<std::int64_t>(size_of(ref.dtype));
    };
    shift(call.a, gemm.a_offsets[i]);
    shift(call.b, gemm.b_offsets[i]);
    shift(call.c, gemm.c_offsets[i]);
    return call;
  };
  const auto count = static_cast<std::int64_t>(gemm.c_offsets.size());
  const double work = static_cast<double>(gemm.call.m) * gemm.call.n * gemm.call.k;
  ThreadPool& pool = ctx.threads();
  if (parallel_batches && count >= pool.num_threads() && work < 64.0 * 64 * 64) {
    // Nested launches run inline, so each batch's GEMM runs on the thread that took it.
    pool.parallel_for(count, [&](std::int64_t i) { engine(batch_call(i), ctx); });
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) engine(batch_call(i), ctx);
}

}  // namespace tileops::ops::cpu
