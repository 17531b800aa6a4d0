// Memory-bound row operators on [4096, 4096] float32 and bfloat16 (args: dtype, threads):
// scaled_softmax, causal_softmax and add_rms_norm, with a plain copy of the same bytes and
// rms_norm (same traffic as the softmaxes) as references. bytes_per_second counts one read of each
// input and one write of each output.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "tileops/core/scalar.h"
#include "tileops/core/tensor_storage.h"
#include "tileops/ops/add_rms_norm.h"
#include "tileops/ops/causal_softmax.h"
#include "tileops/ops/rms_norm.h"
#include "tileops/ops/scaled_softmax.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops {
namespace {

constexpr std::int64_t kRows = 4096;
constexpr std::int64_t kCols = 4096;

DataType dtype_arg(const benchmark::State& state) {
  return state.range(0) == 0 ? DataType::kFloat32 : DataType::kBFloat16;
}

TensorStorage random_matrix(DataType dtype, std::uint64_t seed) {
  TensorStorage t({kRows, kCols}, dtype);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  char* p = static_cast<char*>(t.data());
  for (std::int64_t i = 0; i < kRows * kCols; ++i) {
    write_from_double(value(rng), p + i * size_of(dtype), dtype);
  }
  return t;
}

// Runs `body` on a pool of state.range(1) threads and reports `streams` tensors moved per call.
template <typename Body>
void run(benchmark::State& state, int streams, Body&& body) {
  ThreadPool pool(static_cast<int>(state.range(1)));
  Context ctx;
  ctx.thread_pool = &pool;
  for (auto _ : state) body(ctx, pool);
  state.SetBytesProcessed(state.iterations() * streams * kRows * kCols *
                          static_cast<std::int64_t>(size_of(dtype_arg(state))));
}

void BM_Copy(benchmark::State& state) {
  const auto x = random_matrix(dtype_arg(state), 1);
  const auto y = random_matrix(dtype_arg(state), 2);
  const std::size_t row_bytes = kCols * size_of(dtype_arg(state));
  run(state, 2, [&](const Context&, ThreadPool& pool) {
    pool.parallel_range(kRows, 1, [&](int, std::int64_t begin, std::int64_t end) {
      std::memcpy(static_cast<char*>(y.data()) + begin * row_bytes,
                  static_cast<const char*>(x.data()) + begin * row_bytes,
                  static_cast<std::size_t>(end - begin) * row_bytes);
    });
  });
}

void BM_ScaledSoftmax(benchmark::State& state) {
  const auto x = random_matrix(dtype_arg(state), 1);
  const auto y = random_matrix(dtype_arg(state), 2);
  run(state, 2, [&](const Context& ctx, ThreadPool&) { ops::scaled_softmax(x, 0.125, y, ctx); });
}

void BM_CausalSoftmax(benchmark::State& state) {
  const auto x = random_matrix(dtype_arg(state), 1);
  const auto y = random_matrix(dtype_arg(state), 2);
  run(state, 2, [&](const Context& ctx, ThreadPool&) { ops::causal_softmax(x, y, ctx); });
}

TensorStorage zero_weight(DataType dtype) {
  TensorStorage w({kCols}, dtype);
  std::memset(w.data(), 0, w.bytes());
  return w;
}

void BM_RmsNorm(benchmark::State& state) {
  const auto x = random_matrix(dtype_arg(state), 1);
  const auto y = random_matrix(dtype_arg(state), 2);
  const auto w = zero_weight(dtype_arg(state));
  run(state, 2, [&](const Context& ctx, ThreadPool&) { ops::rms_norm(x, w, 1e-6, y, ctx); });
}

void BM_AddRmsNorm(benchmark::State& state) {
  const auto x = random_matrix(dtype_arg(state), 1);
  const auto r = random_matrix(dtype_arg(state), 2);
  const auto y = random_matrix(dtype_arg(state), 3);
  const auto s = random_matrix(dtype_arg(state), 4);
  const auto w = zero_weight(dtype_arg(state));
  run(state, 4,
      [&](const Context& ctx, ThreadPool&) { ops::add_rms_norm(x, r, w, 1e-6, y, s, ctx); });
}

// {dtype: 0 float32, 1 bfloat16} x {threads}.
#define TILEOPS_ROW_BENCH(fn) \
  BENCHMARK(fn)->ArgsProduct({{0, 1}, {1, 2}})->ArgNames({"bf16", "threads"})->UseRealTime()

TILEOPS_ROW_BENCH(BM_Copy);
TILEOPS_ROW_BENCH(BM_RmsNorm);
TILEOPS_ROW_BENCH(BM_ScaledSoftmax);
TILEOPS_ROW_BENCH(BM_CausalSoftmax);
TILEOPS_ROW_BENCH(BM_AddRmsNorm);

}  // namespace
}  // namespace tileops

BENCHMARK_MAIN();
