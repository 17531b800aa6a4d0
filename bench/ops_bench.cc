// Memory-bound operators on [4096, 4096] against the machine's copy bandwidth (BM_copy of
// ceilings.cc), measured in the same run. Counters: bytes_per_second counts bytes read + written
// once per call.
// Run: build/release/bench/ops_bench --benchmark_format=json (bench/foundation_report.py does).
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "tests/support/test_tensors.h"
#include "tileops/ops.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops {
namespace {

constexpr std::int64_t kRows = 4096;
constexpr std::int64_t kCols = 4096;

// Operand `slot` of a benchmark: random data, made once per process for each (slot, shape,
// dtype) and reused by every repetition (making 16M random values takes longer than a run).
TensorStorage& make(int slot, const Dims& shape, DataType dtype) {
  using Key = std::tuple<int, DataType, std::vector<std::int64_t>>;
  static std::map<Key, TensorStorage> made;
  static std::mt19937_64 rng(1);
  Key key{slot, dtype, {}};
  for (int i = 0; i < shape.size(); ++i) std::get<2>(key).push_back(shape[i]);
  auto it = made.find(key);
  if (it == made.end()) it = made.emplace(key, testing::random_tensor(shape, dtype, rng)).first;
  return it->second;
}

void set_bytes(benchmark::State& state, std::initializer_list<const TensorStorage*> tensors) {
  double bytes = 0;
  for (const TensorStorage* t : tensors) bytes += static_cast<double>(t->bytes());
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

DataType dtype_arg(const benchmark::State& state) {
  return state.range(0) == 0 ? DataType::kFloat32 : DataType::kBFloat16;
}

void BM_add(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& a = make(1, {kRows, kCols}, dt);
  TensorStorage& b = make(2, {kRows, kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  for (auto _ : state) ops::add(a, b, o);
  set_bytes(state, {&a, &b, &o});
}

void BM_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& a = make(1, {kRows, kCols}, dt);
  TensorStorage& b = make(2, {kRows, kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  for (auto _ : state) ops::mul(a, b, o);
  set_bytes(state, {&a, &b, &o});
}

void BM_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& w = make(2, {kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  for (auto _ : state) ops::rms_norm(x, w, 1e-6, o);
  set_bytes(state, {&x, &o});
}

void BM_add_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& r = make(2, {kRows, kCols}, dt);
  TensorStorage& w = make(3, {kCols}, dt);
  TensorStorage& o = make(4, {kRows, kCols}, dt);
  TensorStorage& ro = make(5, {kRows, kCols}, dt);
  for (auto _ : state) ops::add_rms_norm(x, r, w, 1e-6, o, ro);
  set_bytes(state, {&x, &r, &o, &ro});
}

void BM_swiglu(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& a = make(1, {kRows, kCols}, dt);
  TensorStorage& g = make(2, {kRows, kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  for (auto _ : state) ops::swiglu(a, g, o);
  set_bytes(state, {&a, &g, &o});
}

void BM_silu_and_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& o = make(2, {kRows, kCols / 2}, dt);
  for (auto _ : state) ops::silu_and_mul(x, -1, o);
  set_bytes(state, {&x, &o});
}

void BM_scaled_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& o = make(2, {kRows, kCols}, dt);
  for (auto _ : state) ops::scaled_softmax(x, 0.125, o);
  set_bytes(state, {&x, &o});
}

void BM_causal_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& o = make(2, {kRows, kCols}, dt);
  for (auto _ : state) ops::causal_softmax(x, o);
  set_bytes(state, {&x, &o});
}

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
