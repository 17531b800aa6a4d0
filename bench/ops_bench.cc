// Memory-bound operators on [4096, 4096] against the machine's copy bandwidth. Each benchmark
// alternates one call of its operator with one 64 MiB copy (ceilings.h) and reports the median
// rate of each: bytes_per_second (bytes read + written once per call) and copy_bytes_per_second
// (read + write), so that the bandwidth's drift during a run (±15% from minute to minute on
// shared machines) cancels out of their ratio.
// Run: build/release/bench/ops_bench --benchmark_format=json (bench/foundation_report.py does).
#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "bench/ceilings.h"
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

// Times `op` and the copy alternately (ceilings.h); `tensors` are the operator's operands,
// whose bytes it moves once per call.
template <class Op>
void paired(benchmark::State& state, Op op, std::initializer_list<const TensorStorage*> tensors) {
  const bench::Medians m = bench::alternate_with_copy(state, op);
  if (m.work_seconds <= 0) return;
  double bytes = 0;
  for (const TensorStorage* t : tensors) bytes += static_cast<double>(t->bytes());
  state.counters["bytes_per_second"] = bytes / m.work_seconds;
  state.counters["copy_bytes_per_second"] = m.copy_bytes / m.copy_seconds;
}

DataType dtype_arg(const benchmark::State& state) {
  return state.range(0) == 0 ? DataType::kFloat32 : DataType::kBFloat16;
}

void BM_add(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& a = make(1, {kRows, kCols}, dt);
  TensorStorage& b = make(2, {kRows, kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  paired(state, [&] { ops::add(a, b, o); }, {&a, &b, &o});
}

void BM_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& a = make(1, {kRows, kCols}, dt);
  TensorStorage& b = make(2, {kRows, kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  paired(state, [&] { ops::mul(a, b, o); }, {&a, &b, &o});
}

void BM_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& w = make(2, {kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  paired(state, [&] { ops::rms_norm(x, w, 1e-6, o); }, {&x, &o});
}

void BM_add_rms_norm(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& r = make(2, {kRows, kCols}, dt);
  TensorStorage& w = make(3, {kCols}, dt);
  TensorStorage& o = make(4, {kRows, kCols}, dt);
  TensorStorage& ro = make(5, {kRows, kCols}, dt);
  paired(state, [&] { ops::add_rms_norm(x, r, w, 1e-6, o, ro); }, {&x, &r, &o, &ro});
}

void BM_swiglu(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& a = make(1, {kRows, kCols}, dt);
  TensorStorage& g = make(2, {kRows, kCols}, dt);
  TensorStorage& o = make(3, {kRows, kCols}, dt);
  paired(state, [&] { ops::swiglu(a, g, o); }, {&a, &g, &o});
}

void BM_silu_and_mul(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& o = make(2, {kRows, kCols / 2}, dt);
  paired(state, [&] { ops::silu_and_mul(x, -1, o); }, {&x, &o});
}

void BM_scaled_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& o = make(2, {kRows, kCols}, dt);
  paired(state, [&] { ops::scaled_softmax(x, 0.125, o); }, {&x, &o});
}

void BM_causal_softmax(benchmark::State& state) {
  const DataType dt = dtype_arg(state);
  TensorStorage& x = make(1, {kRows, kCols}, dt);
  TensorStorage& o = make(2, {kRows, kCols}, dt);
  paired(state, [&] { ops::causal_softmax(x, o); }, {&x, &o});
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
