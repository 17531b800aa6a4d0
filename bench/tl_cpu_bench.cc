// The tile language's cpu backend against this machine's ceilings, 2 threads (the global pool):
// JIT'd vadd and gelu on 2^26 float32 vs a copy of 2^26 floats, row softmax and rms_norm on
// [4096, 4096] vs a copy of that matrix (bytes_per_second counts one read of each input and one
// write of each output), a tiled 2048^3 float32 matmul vs the FMA peak (FLOPS counter), the warm
// launch of a cached tiny kernel and the cold compile of vadd (always_compile, so trace +
// codegen + compiler + dlopen). bench/results/tl-cpu.md has the numbers and ratios.
// $TILEOPS_NUM_THREADS, when set, sizes the pool instead (1: the same kernels on one thread; the
// launches still split the work into 2 blocks).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "bench/peak_kernels.h"
#include "tileops/core/tensor_storage.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/tl.h"

namespace tileops {
namespace {

namespace tl = ::tileops::tl;
constexpr int kThreads = 2;
constexpr std::int64_t kN = std::int64_t{1} << 26;
constexpr std::int64_t kRows = 4096, kCols = 4096, kMat = 2048;
const auto f32 = DataType::kFloat32;

TensorStorage random_f32(std::int64_t n, std::uint64_t seed) {
  TensorStorage t({n}, f32);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  auto* p = static_cast<float*>(t.data());
  for (std::int64_t i = 0; i < n; ++i) p[i] = value(rng);
  return t;
}

void copy(const TensorStorage& from, const TensorStorage& to, std::int64_t n) {
  ThreadPool::global().parallel_range(n, 4096, [&](int, std::int64_t b, std::int64_t e) {
    std::memcpy(static_cast<float*>(to.data()) + b, static_cast<const float*>(from.data()) + b,
                static_cast<std::size_t>(e - b) * 4);
  });
}

// $TL_BENCH_DUMP names a directory for the generated sources (dump_dir).
tl::Options options(benchmark::State& state) {
  tl::Options o{.backend = "cpu", .fast_math = state.range(0) != 0};
  if (const char* dir = std::getenv("TL_BENCH_DUMP"); dir != nullptr) o.dump_dir = dir;
  return o;
}

// z = f(x[, y]) in tiles of 2048 lanes: each block takes a contiguous run of tiles, as each
// thread of the copy takes a contiguous half, or (`strided`) tiles strided over the blocks, which
// leaves an 8 KiB gap after each tile in every thread's stream (the hardware prefetcher then
// restarts at each page; in alternating runs 0.8-0.9x the bytes per second).
tl::Kernel elementwise(bool binary, bool strided, tl::Options o) {
  return tl::jit(
      binary ? "vadd" : "gelu",
      [binary, strided](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress z, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n}), ty = tl::tensor(y, {n}), tz = tl::tensor(z, {n});
        const tl::Value tiles = tl::ceildiv(n, 2048), run = tl::ceildiv(tiles, tl::block_num());
        const tl::Value first = tl::block_idx() * run;
        for (tl::Value i : strided ? tl::range(tl::block_idx(), tiles, tl::block_num())
                                   : tl::range(first, tl::minimum(first + run, tiles))) {
          const tl::Value a = tl::load(tx, {2048}, {i * 2048});
          tl::store(binary ? a + tl::load(ty, {2048}, {i * 2048}) : tl::gelu(a), tz, {i * 2048});
        }
      },
      std::move(o));
}

void BM_Copy1D(benchmark::State& state) {
  const auto x = random_f32(kN, 1), y = random_f32(kN, 2);
  for (auto _ : state) copy(x, y, kN);
  state.SetBytesProcessed(state.iterations() * 2 * kN * 4);
}
BENCHMARK(BM_Copy1D)->UseRealTime();

void BM_TlVadd(benchmark::State& state) {
  const auto x = random_f32(kN, 1), y = random_f32(kN, 2), z = random_f32(kN, 3);
  const tl::Kernel k = elementwise(true, state.range(1) != 0, options(state));
  k.launch(kThreads, x, y, z, kN);  // compile outside the timing
  for (auto _ : state) k.launch(kThreads, x, y, z, kN);
  state.SetBytesProcessed(state.iterations() * 3 * kN * 4);
  if (state.range(1) != 0) state.SetLabel("strided tiles");
}
BENCHMARK(BM_TlVadd)->Args({0, 0})->Args({0, 1})->UseRealTime();

void BM_TlGelu(benchmark::State& state) {
  const auto x = random_f32(kN, 1), z = random_f32(kN, 3);
  const tl::Kernel k = elementwise(false, state.range(1) != 0, options(state));
  k.launch(kThreads, x, x, z, kN);
  for (auto _ : state) k.launch(kThreads, x, x, z, kN);
  state.SetBytesProcessed(state.iterations() * 2 * kN * 4);
  if (state.range(1) != 0) state.SetLabel("strided tiles");
}
BENCHMARK(BM_TlGelu)->Args({0, 0})->Args({1, 0})->Args({0, 1})->UseRealTime();

// One row per iteration: softmax (norm = 0) or rms_norm (norm = 1) over the whole row.
tl::Kernel rows(bool norm, tl::Options o) {
  return tl::jit(
      norm ? "rms_norm_rows" : "softmax_rows",
      [norm](tl::GlobalAddress x, tl::GlobalAddress g, tl::GlobalAddress y, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n, kCols}), ty = tl::tensor(y, {n, kCols});
        const tl::Value gamma = tl::load(tl::tensor(g, {kCols}), {kCols}, {0});
        for (tl::Value r : tl::range(tl::block_idx(), n, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, kCols}, {r, 0});
          tl::prefetch(tx, {1, kCols}, {r + tl::block_num(), 0});  // this block's next row
          tl::prefetch(ty, {1, kCols}, {r, 0});  // the out row: its stores then find the lines
          tl::store(norm ? tl::rms_norm(v, gamma, 1e-6) : tl::softmax(v), ty, {r, 0});
        }
      },
      std::move(o));
}

void BM_CopyRows(benchmark::State& state) {
  const auto x = random_f32(kRows * kCols, 1), y = random_f32(kRows * kCols, 2);
  for (auto _ : state) copy(x, y, kRows * kCols);
  state.SetBytesProcessed(state.iterations() * 2 * kRows * kCols * 4);
}
BENCHMARK(BM_CopyRows)->UseRealTime();

void BM_TlRows(benchmark::State& state) {
  const auto x = random_f32(kRows * kCols, 1), y = random_f32(kRows * kCols, 2);
  const auto g = random_f32(kCols, 4);
  const tl::Kernel k = rows(state.range(1) != 0, options(state));
  k.launch(kThreads, x, g, y, kRows);
  for (auto _ : state) k.launch(kThreads, x, g, y, kRows);
  state.SetBytesProcessed(state.iterations() * 2 * kRows * kCols * 4);
  state.SetLabel(state.range(1) != 0 ? "rms_norm" : "softmax");
}
BENCHMARK(BM_TlRows)->Args({0, 0})->Args({1, 0})->Args({0, 1})->UseRealTime();

// C = A @ B, [2048, 2048] float32: tm x tn output tiles strided over the blocks, k steps of tk
// (square 64 and 128 tiles, 192 x 128 x 256, and the 256 x 128 x 256 tiles of the tl gemm
// operator).
void BM_TlMatmul(benchmark::State& state) {
  const auto a = random_f32(kMat * kMat, 1), b = random_f32(kMat * kMat, 2);
  const auto c = random_f32(kMat * kMat, 3);
  const tl::Kernel k = tl::jit(
      "matmul",
      [](tl::GlobalAddress pa, tl::GlobalAddress pb, tl::GlobalAddress pc, tl::Int n,
         tl::ConstExpr<int> tm, tl::ConstExpr<int> tn, tl::ConstExpr<int> tk) {
        const tl::Value ta = tl::tensor(pa, {n, n}), tb = tl::tensor(pb, {n, n});
        const tl::Value tc = tl::tensor(pc, {n, n});
        const tl::Value col_tiles = tl::ceildiv(n, *tn);
        for (tl::Value i :
             tl::range(tl::block_idx(), tl::ceildiv(n, *tm) * col_tiles, tl::block_num())) {
          const tl::Value row = tl::floordiv(i, col_tiles) * *tm;
          const tl::Value col = (i % col_tiles) * *tn;
          tl::Var acc = tl::zeros({*tm, *tn}, f32);
          for (tl::Value kk : tl::range(0, tl::ceildiv(n, *tk))) {
            acc = tl::matmul_acc(acc, tl::load(ta, {*tm, *tk}, {row, kk * *tk}),
                                 tl::load(tb, {*tk, *tn}, {kk * *tk, col}));
          }
          tl::store(acc, tc, {row, col});
        }
      },
      options(state));
  const int tm = static_cast<int>(state.range(1)), tn = static_cast<int>(state.range(2));
  const int tk = static_cast<int>(state.range(3));
  k.launch(kThreads, a, b, c, kMat, tm, tn, tk);
  for (auto _ : state) k.launch(kThreads, a, b, c, kMat, tm, tn, tk);
  state.counters["FLOPS"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * kMat * kMat * kMat,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TlMatmul)
    ->Args({0, 64, 64, 64})
    ->Args({0, 128, 128, 128})
    ->Args({0, 192, 128, 256})
    ->Args({0, 256, 128, 256})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Independent FMA chains on every thread of the pool: the float32 FMA peak of 2 threads.
void BM_FmaPeak(benchmark::State& state) {
  double flops = 0;
  float sink[kThreads] = {};
  for (auto _ : state) {
    ThreadPool::global().parallel_for(kThreads, [&](std::int64_t t) {
      const double f = bench::fma_peak_flops(1 << 22, &sink[t]);
      if (t == 0) flops += f * kThreads;
    });
  }
  benchmark::DoNotOptimize(sink);
  state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FmaPeak)->UseRealTime();

tl::Kernel tiny(tl::Options o) {
  return tl::jit(
      "tiny",
      [](tl::GlobalAddress x, tl::GlobalAddress z, tl::Int n) {
        tl::store(tl::load(tl::tensor(x, {n}), {8}, {0}) + 1, tl::tensor(z, {n}), {0});
      },
      std::move(o));
}

void BM_TlWarmLaunch(benchmark::State& state) {
  TensorStorage x({8}, f32), z({8}, f32);
  std::memset(x.data(), 0, x.bytes());
  const tl::Kernel k = tiny({.backend = "cpu"});
  k.launch(1, x, z, 8);  // compile (or load from the cache) once
  for (auto _ : state) k.launch(state.range(0), x, z, 8);
}
BENCHMARK(BM_TlWarmLaunch)->Arg(1)->Arg(2);

void BM_TlColdCompileVadd(benchmark::State& state) {
  const auto x = random_f32(4096, 1), y = random_f32(4096, 2), z = random_f32(4096, 3);
  const tl::Kernel k = elementwise(true, false, {.always_compile = true, .backend = "cpu"});
  for (auto _ : state) k.launch(1, x, y, z, 4096);
}
BENCHMARK(BM_TlColdCompileVadd)->Iterations(5)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tileops

int main(int argc, char** argv) {
  if (std::getenv("TILEOPS_NUM_THREADS") == nullptr) {
    tileops::ThreadPool::set_global_num_threads(tileops::kThreads);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
