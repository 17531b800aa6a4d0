// Warm launch overhead of tl::jit kernels on the interp backend: a cached specialisation with a
// tiny body, so the time is the cache lookup, argument conversion and block dispatch (plus the
// interpreter's per-block frame). Peer in the same run: an empty ThreadPool::parallel_for.
#include <benchmark/benchmark.h>

#include "tileops/core/tensor_storage.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/tl.h"

namespace {

namespace tl = tileops::tl;

const tl::Kernel& vadd() {
  static const tl::Kernel k = tl::jit(
      "vadd",
      [](tl::GlobalAddress x, tl::GlobalAddress z, tl::Int n, tl::ConstExpr<int> tile) {
        const tl::Value tx = tl::tensor(x, {n});
        const tl::Value tz = tl::tensor(z, {n});
        tl::store(tl::load(tx, {*tile}, {0}) + 1, tz, {0});
      },
      tl::Options{.backend = "interp"});  // the cpu backend's launch: bench/tl_cpu_bench.cc
  return k;
}

void BM_TlWarmLaunch(benchmark::State& state) {
  const auto cores = state.range(0);
  tileops::TensorStorage x({8}, tileops::DataType::kFloat32), z({8}, tileops::DataType::kFloat32);
  vadd().launch(cores, x, z, 8, 8);  // trace once
  for (auto _ : state) vadd().launch(cores, x, z, 8, 8);
}
BENCHMARK(BM_TlWarmLaunch)->Arg(1)->Arg(2);

void BM_EmptyParallelFor(benchmark::State& state) {
  const auto cores = state.range(0);
  for (auto _ : state) {
    tileops::ThreadPool::global().parallel_for(cores,
                                               [](std::int64_t b) { benchmark::DoNotOptimize(b); });
  }
}
BENCHMARK(BM_EmptyParallelFor)->Arg(1)->Arg(2);

}  // namespace

BENCHMARK_MAIN();
