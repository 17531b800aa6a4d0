// The machine's ceilings as Google benchmarks, linked into every bench that reports ratios to
// them: BM_fma_peak, BM_bf16_peak, BM_amx_bf16_peak and BM_dpbf16_peak (all pool threads run
// bench/peak_kernels.h at once; counter flops_per_second), BM_copy (memcpy of 64 MiB over the
// pool; counter bytes_per_second, read + write bytes) and BM_read (a sum of 128 MiB over the pool;
// bytes_per_second, the bytes read).
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "bench/ceilings.h"
#include "bench/peak_kernels.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "tileops/core/tensor_storage.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops {

void bench::copy_over_pool(const void* in, void* out, std::int64_t bytes) {
  ThreadPool::global().parallel_range(bytes, 1 << 20, [&](int, std::int64_t b, std::int64_t e) {
    std::memcpy(static_cast<char*>(out) + b, static_cast<const char*>(in) + b,
                static_cast<std::size_t>(e - b));
  });
}

double bench::copy_64_mib() {
  static const TensorStorage in = [] {
    TensorStorage t({4096, 4096}, DataType::kFloat32);
    std::memset(t.data(), 1, t.bytes());
    return t;
  }();
  static TensorStorage out = [] {
    TensorStorage t({4096, 4096}, DataType::kFloat32);
    std::memset(t.data(), 0, t.bytes());
    return t;
  }();
  const auto bytes = static_cast<std::int64_t>(in.bytes());
  copy_over_pool(in.data(), out.data(), bytes);
  return 2.0 * static_cast<double>(bytes);
}

namespace {

using PeakFn = double (*)(std::int64_t, float*);

void run_peak(benchmark::State& state, PeakFn fn) {
  ThreadPool& pool = ThreadPool::global();
  std::vector<float> sink(static_cast<std::size_t>(pool.num_threads()));
  std::vector<double> flops(sink.size());
  double total = 0;
  for (auto _ : state) {
    pool.parallel_for(pool.num_threads(), [&](std::int64_t i) {
      flops[static_cast<std::size_t>(i)] = fn(1 << 22, &sink[static_cast<std::size_t>(i)]);
    });
    for (double f : flops) total += f;
    benchmark::DoNotOptimize(sink.data());
  }
  state.counters["flops_per_second"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
}

void BM_fma_peak(benchmark::State& state) { run_peak(state, &bench::fma_peak_flops); }
void BM_bf16_peak(benchmark::State& state) { run_peak(state, &bench::bf16_peak_flops); }

void BM_amx_bf16_peak(benchmark::State& state) {
  if (!ops::cpu::amx_bf16_enabled()) {
    state.SkipWithError("no AMX-BF16 on this CPU (or TILEOPS_AMX=0)");
    return;
  }
  run_peak(state, [](std::int64_t iterations, float*) {
    return bench::amx_bf16_peak_flops(iterations / 8);  // a tile product is 16 cycles
  });
}

void BM_dpbf16_peak(benchmark::State& state) {
  if (!cpu_avx512_bf16()) {
    state.SkipWithError("no AVX512-BF16 on this CPU");
    return;
  }
  run_peak(state, &bench::dpbf16_peak_flops);
}

void BM_copy(benchmark::State& state) {
  const TensorStorage in({4096, 4096}, DataType::kFloat32), out({4096, 4096}, DataType::kFloat32);
  std::memset(in.data(), 1, in.bytes());  // touch every page before timing
  std::memset(out.data(), 0, out.bytes());
  const auto bytes = static_cast<std::int64_t>(in.bytes());
  for (auto _ : state) {
    bench::copy_over_pool(in.data(), out.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.counters["bytes_per_second"] = benchmark::Counter(
      2.0 * static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
}

// Kernels that only read (decode GEMM, decode attention) are bound by this rather than by the
// copy, whose figure counts read and write bytes: on this VM a pure read stream reads 0.8x to
// 1.2x the copy's figure from minute to minute.
void BM_read(benchmark::State& state) {
  const TensorStorage in({8192, 4096}, DataType::kFloat32);  // 128 MiB, 4× a 32 MiB LLC
  std::memset(in.data(), 0, in.bytes());
  const auto* x = static_cast<const float*>(in.data());
  const auto floats = static_cast<std::int64_t>(in.bytes() / sizeof(float));
  std::vector<float> sums(static_cast<std::size_t>(ThreadPool::global().num_threads()));
  for (auto _ : state) {
    ThreadPool::global().parallel_range(
        floats, 1 << 18, [&](int chunk, std::int64_t b, std::int64_t e) {
          sums[static_cast<std::size_t>(chunk)] = bench::read_sum(x + b, (e - b) / 64 * 64);
        });
    benchmark::DoNotOptimize(sums.data());
  }
  state.counters["bytes_per_second"] = benchmark::Counter(
      static_cast<double>(in.bytes()), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_fma_peak)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_bf16_peak)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_amx_bf16_peak)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dpbf16_peak)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_copy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tileops
