// Memory-bound operators on [4096, 4096] against the machine's copy bandwidth, measured in the
// same run. Counters: bytes_per_second counts bytes read + written once per call.
// Run: build/release/bench/ops_bench --benchmark_format=json (bench/foundation_report.py does).
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "tests/support/test_tensors.h"
#include "tileops/ops.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops {
namespace {

constexpr std::int64_t kRows = 4096;
constexpr std::int64_t kCols = 4096;

TensorStorage make(const Dims& shape, DataType dtype) {
  static std::mt19937_64 rng(1);
  return testing::random_tensor(shape, dtype, rng);
}

void set_bytes(benchmark::State& state, std::initializer_list<const TensorStorage*> tensors) {
  double bytes = 0;
  for (const TensorStorage* t : tensors) bytes += static_cast<double>(t->bytes());
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

// The ceiling: memcpy of 64 MiB split over the pool (read + write bytes/s).
void BM_copy(benchmark::State& state) {
  TensorStorage in = make({kRows, kCols}, DataType::kFloat32);
  TensorStorage out = make({kRows, kCols}, DataType::kFloat32);
  const auto bytes = static_cast<std::int64_t>(in.bytes());
  for (auto _ : state) {
    ThreadPool::global().parallel_range(bytes, 1 << 20, [&](int, std::int64_t b, std::int64_t e) {
      std::memcpy(static_cast<char*>(out.data()) + b, static_cast<char*>(in.data()) + b,
                  static_cast<std::size_t>(e - b));
    });
    benchmark::ClobberMemory();
  }
  set_bytes(state, {&in, &out});
}

DataType dtype_arg(const benchmark::State& state) {
  return state.range(0) == 0 ? DataType::kFloat32 : DataType::kBFloat16;
}

void BM_add(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage a = make({kRows, kCols}, dt), b = make({kRows, kCols}, dt),
                o = make({kRows, kCols}, dt);
  for (auto _ : state) ops::add(a, b, o);
  set_bytes(state, {&a, &b, &o});
}

void BM_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage a = make({kRows, kCols}, dt), b = make({kRows, kCols}, dt),
                o = make({kRows, kCols}, dt);
  for (auto _ : state) ops::mul(a, b, o);
  set_bytes(state, {&a, &b, &o});
}

void BM_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), w = make({kCols}, dt), o = make({kRows, kCols}, dt);
  for (auto _ : state) ops::rms_norm(x, w, 1e-6, o);
  set_bytes(state, {&x, &o});
}

void BM_add_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), r = make({kRows, kCols}, dt), w = make({kCols}, dt);
  TensorStorage o = make({kRows, kCols}, dt), ro = make({kRows, kCols}, dt);
  for (auto _ : state) ops::add_rms_norm(x, r, w, 1e-6, o, ro);
  set_bytes(state, {&x, &r, &o, &ro});
}

void BM_swiglu(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage a = make({kRows, kCols}, dt), g = make({kRows, kCols}, dt),
                o = make({kRows, kCols}, dt);
  for (auto _ : state) ops::swiglu(a, g, o);
  set_bytes(state, {&a, &g, &o});
}

void BM_silu_and_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), o = make({kRows, kCols / 2}, dt);
  for (auto _ : state) ops::silu_and_mul(x, -1, o);
  set_bytes(state, {&x, &o});
}

void BM_scaled_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), o = make({kRows, kCols}, dt);
  for (auto _ : state) ops::scaled_softmax(x, 0.125, o);
  set_bytes(state, {&x, &o});
}

void BM_causal_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage x = make({kRows, kCols}, dt), o = make({kRows, kCols}, dt);
  for (auto _ : state) ops::causal_softmax(x, o);
  set_bytes(state, {&x, &o});
}

BENCHMARK(BM_copy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_add)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mul)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rms_norm)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_add_rms_norm)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_swiglu)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_silu_and_mul)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_scaled_softmax)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_causal_softmax)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tileops

BENCHMARK_MAIN();
