// The tile-language implementations of the operators ("tl") against the native ones in the same
// run: every memory-bound operator on [4096, 4096] float32 and bfloat16, and gemm 2048³ float32.
// Arguments: (dtype: 0 float32 / 1 bfloat16, implementation index). Counters: bytes_per_second
// (bytes read + written once per call) or FLOPS. The kernels are compiled (or loaded from the
// persistent cache) by a warm-up call before timing.
// Run: bench/tl_ops_report.py (writes the table of bench/results/tl-ops.md).
#include <benchmark/benchmark.h>

#include <random>

#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

constexpr std::int64_t kRows = 4096, kCols = 4096, kGemm = 2048;

TensorStorage make(const Dims& shape, DataType dtype) {
  static std::mt19937_64 rng(1);
  return testing::random_tensor(shape, dtype, rng);
}

DataType dtype_arg(const benchmark::State& state) {
  return state.range(0) == 0 ? DataType::kFloat32 : DataType::kBFloat16;
}

Context ctx_arg(const benchmark::State& state) {
  Context ctx;
  ctx.implementation_index = static_cast<int>(state.range(1));
  return ctx;
}

// Times fn (after one warm-up call) and counts the bytes of `tensors` per call.
template <typename F>
void run(benchmark::State& state, std::initializer_list<const TensorStorage*> tensors, F fn) {
  fn();
  for (auto _ : state) fn();
  double bytes = 0;
  for (const TensorStorage* t : tensors) bytes += static_cast<double>(t->bytes());
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_add(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage a = make({kRows, kCols}, dt), b = make({kRows, kCols}, dt),
                o = make({kRows, kCols}, dt);
  run(state, {&a, &b, &o}, [&] { ops::add(a, b, o, ctx); });
}

void BM_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage a = make({kRows, kCols}, dt), b = make({kRows, kCols}, dt),
                o = make({kRows, kCols}, dt);
  run(state, {&a, &b, &o}, [&] { ops::mul(a, b, o, ctx); });
}

void BM_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), w = make({kCols}, dt), o = make({kRows, kCols}, dt);
  run(state, {&x, &o}, [&] { ops::rms_norm(x, w, 1e-6, o, ctx); });
}

void BM_add_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), r = make({kRows, kCols}, dt), w = make({kCols}, dt);
  TensorStorage o = make({kRows, kCols}, dt), ro = make({kRows, kCols}, dt);
  run(state, {&x, &r, &o, &ro}, [&] { ops::add_rms_norm(x, r, w, 1e-6, o, ro, ctx); });
}

void BM_swiglu(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage a = make({kRows, kCols}, dt), g = make({kRows, kCols}, dt),
                o = make({kRows, kCols}, dt);
  run(state, {&a, &g, &o}, [&] { ops::swiglu(a, g, o, ctx); });
}

void BM_silu_and_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage x = make({kRows, 2 * kCols}, dt), o = make({kRows, kCols}, dt);
  run(state, {&x, &o}, [&] { ops::silu_and_mul(x, -1, o, ctx); });
}

void BM_scaled_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), o = make({kRows, kCols}, dt);
  run(state, {&x, &o}, [&] { ops::scaled_softmax(x, 0.125, o, ctx); });
}

void BM_causal_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), o = make({kRows, kCols}, dt);
  run(state, {&x, &o}, [&] { ops::causal_softmax(x, o, ctx); });
}

void BM_gemm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  const Context ctx = ctx_arg(state);
  TensorStorage a = make({kGemm, kGemm}, dt), b = make({kGemm, kGemm}, dt),
                c = make({kGemm, kGemm}, dt);
  const auto call = [&] { ops::gemm(a, b, 1.0, 0.0, false, false, c, ctx); };
  call();
  for (auto _ : state) call();
  state.counters["FLOPS"] = benchmark::Counter(2.0 * kGemm * kGemm * kGemm,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// Native (0) and tl (1) for both dtypes; gemm: native (0) and tl (2), float32.
#define TL_OPS_BENCH(name)                                                                      \
  BENCHMARK(name)->Args({0, 0})->Args({0, 1})->Args({1, 0})->Args({1, 1})->UseRealTime()->Unit( \
      benchmark::kMillisecond)
TL_OPS_BENCH(BM_add);
TL_OPS_BENCH(BM_mul);
TL_OPS_BENCH(BM_rms_norm);
TL_OPS_BENCH(BM_add_rms_norm);
TL_OPS_BENCH(BM_swiglu);
TL_OPS_BENCH(BM_silu_and_mul);
TL_OPS_BENCH(BM_scaled_softmax);
TL_OPS_BENCH(BM_causal_softmax);
BENCHMARK(BM_gemm)->Args({0, 0})->Args({0, 2})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tileops

BENCHMARK_MAIN();
