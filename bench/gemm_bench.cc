// GEMM against this machine's ceilings, measured in the same run (bench/ceilings.cc: the float32
// FMA peak, the bfloat16 multiply-accumulate peak, the copy bandwidth), and linear
// (out = x·Wᵀ, W [N, K]) per implementation for prefill (2048³) and decode (M = 1, 16;
// N = K = 4096). Counters: flops_per_second (2·M·N·K per call) and weight_bytes_per_second
// (the bytes of W per call, what decode must stream). Decode also runs linear_packed, over
// pack_linear_weight's form of the weights. BM_linear_quantized runs linear_quantized (int8 and
// int4 weights) at M = 1 and 16, alternating call by call with the copy of bench/ceilings.h so
// that its counter copy_fraction (quantized weight bytes per second over the copy's bytes per
// second) cancels the shared machine's drift; bench/quantized_report.py writes its table.
// BM_scaled_mm runs scaled_mm (float8_e4m3fn, vLLM's weight.t() layout, per-token/per-channel or
// 128x128 block scales) alternating call by call with linear in bfloat16 on the same shapes and
// with the copy: its counters of_bf16 (the bfloat16 linear's time over scaled_mm's) and
// copy_fraction compare within one run; bench/scaled_mm_report.py writes its table.
// Run: TILEOPS_NUM_THREADS=2 build/release/bench/gemm_bench (bench/gemm_report.py does).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "bench/ceilings.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

TensorStorage make(const Dims& shape, DataType dtype) {
  static std::mt19937_64 rng(1);
  return testing::random_tensor(shape, dtype, rng, testing::Layout::kContiguous, -1.0, 1.0);
}

// The dtype argument: 0 float32, 1 bfloat16, 2 float16.
DataType dtype_arg(std::int64_t arg) {
  return arg == 0 ? DataType::kFloat32 : arg == 1 ? DataType::kBFloat16 : DataType::kFloat16;
}

// Copies of the weights a decode case cycles through, 128 MiB or more of them: a model's layers
// each bring their own, and one 4096 x 4096 bfloat16 matrix (32 MiB) would stay in a 32 MiB LLC.
std::int64_t decode_copies(std::int64_t weight_bytes) {
  return std::max<std::int64_t>(2, ((128 << 20) + weight_bytes - 1) / weight_bytes);
}

void set_linear_counters(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k,
                         std::int64_t weight_bytes) {
  state.counters["flops_per_second"] = benchmark::Counter(
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
      benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes_per_second"] = benchmark::Counter(
      static_cast<double>(weight_bytes), benchmark::Counter::kIsIterationInvariantRate);
}

// Args: dtype, implementation index, M, N, K.
void BM_linear(benchmark::State& state) {
  const DataType dtype = dtype_arg(state.range(0));
  const int index = static_cast<int>(state.range(1));
  const std::int64_t m = state.range(2), n = state.range(3), k = state.range(4);
  const auto active = ops::active_implementation_indices("linear", DeviceType::kCpu);
  if (std::find(active.begin(), active.end(), index) == active.end()) {
    state.SkipWithError("implementation not active in this build");
    return;
  }
  TensorStorage x = make({m, k}, dtype), out = make({m, n}, dtype);
  const std::int64_t bytes = n * k * static_cast<std::int64_t>(size_of(dtype));
  const std::int64_t copies = m <= 16 ? decode_copies(bytes) : 1;
  std::vector<TensorStorage> weights;
  for (std::int64_t c = 0; c < copies; ++c) weights.push_back(make({n, k}, dtype));
  Context ctx;
  ctx.implementation_index = index;
  std::size_t next = 0;
  for (auto _ : state) {
    ops::linear(x, weights[next], Tensor(), out, ctx);
    next = (next + 1) % weights.size();
  }
  set_linear_counters(state, m, n, k, bytes);
}

// linear_packed over pack_linear_weight's form of the weights (the explicit pack_weight option),
// for decode. Args: dtype (as above), M, N, K.
void BM_linear_packed(benchmark::State& state) {
  const DataType dtype = dtype_arg(state.range(0));
  const std::int64_t m = state.range(1), n = state.range(2), k = state.range(3);
  TensorStorage x = make({m, k}, dtype), out = make({m, n}, dtype);
  const std::int64_t bytes = n * k * static_cast<std::int64_t>(size_of(dtype));
  const std::int64_t copies = decode_copies(bytes);
  std::vector<TensorStorage> packed;
  for (std::int64_t c = 0; c < copies; ++c) {
    const TensorStorage weight = make({n, k}, dtype);
    packed.push_back(make({ops::packed_linear_weight_numel(n, k, dtype)}, dtype));
    ops::pack_linear_weight(weight, packed.back());
  }
  std::size_t next = 0;
  for (auto _ : state) {
    ops::linear_packed(x, packed[next], Tensor(), out);
    next = (next + 1) % packed.size();
  }
  set_linear_counters(state, m, n, k, bytes);
}

// Formats of BM_linear_quantized: bits, group_size, symmetric.
struct QuantFormat {
  int bits, group_size;
  bool symmetric;
};
constexpr QuantFormat kQuantFormats[] = {
    {8, 0, true}, {8, 128, true}, {4, 32, true}, {4, 128, true}, {4, 128, false}};

// Args: format (kQuantFormats), dtype (as above), M, N, K.
void BM_linear_quantized(benchmark::State& state) {
  const QuantFormat f = kQuantFormats[state.range(0)];
  const DataType dtype = dtype_arg(state.range(1));
  const std::int64_t m = state.range(2), n = state.range(3), k = state.range(4);
  TensorStorage x = make({m, k}, dtype), out = make({m, n}, dtype);
  const std::int64_t bytes = ops::quantized_weight_bytes(n, k, f.bits, f.group_size, f.symmetric);
  // One quantization (a float64 pass), copied: the copies only need to be distinct memory.
  std::vector<TensorStorage> weights;
  weights.push_back(make({bytes}, DataType::kUInt8));
  ops::quantize_weight(make({n, k}, dtype), f.bits, f.group_size, f.symmetric, weights[0]);
  for (std::int64_t c = 1; c < decode_copies(bytes); ++c) {
    weights.push_back(make({bytes}, DataType::kUInt8));
    std::memcpy(weights.back().data(), weights[0].data(), static_cast<std::size_t>(bytes));
  }
  std::size_t next = 0;
  const bench::Medians med = bench::alternate_with_copy(state, [&] {
    ops::linear_quantized(x, weights[next], Tensor(), out);
    next = (next + 1) % weights.size();
  });
  const double weight_rate = static_cast<double>(bytes) / med.work_seconds;
  const double copy_rate = med.copy_bytes / med.copy_seconds;
  state.counters["weight_bytes_per_second"] = weight_rate;
  state.counters["copy_bytes_per_second"] = copy_rate;
  state.counters["copy_fraction"] = weight_rate / copy_rate;
  state.counters["flops_per_second"] = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                                       static_cast<double>(k) / med.work_seconds;
}

// Args: scales (0 per token/channel, 1 128x128 blocks), M, N, K. Each iteration times one call
// of scaled_mm, one of linear on bfloat16 tensors of the same shapes and one 64 MiB copy; the
// counters use the fastest of each (noise on a shared machine only adds time).
void BM_scaled_mm(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  const bool block = state.range(0) != 0;
  const std::int64_t m = state.range(1), n = state.range(2), k = state.range(3);
  constexpr DataType kE4M3 = DataType::kFloat8E4M3FN;
  const TensorStorage x8 = make({m, k}, kE4M3), x16 = make({m, k}, DataType::kBFloat16);
  const TensorStorage out = make({m, n}, DataType::kBFloat16);
  const std::int64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
  const TensorStorage sa =
      block ? make({m, kb}, DataType::kFloat32) : make({m, 1}, DataType::kFloat32);
  const TensorStorage sb =
      block ? make({kb, nb}, DataType::kFloat32) : make({n, 1}, DataType::kFloat32);
  const std::int64_t copies = m <= 16 ? decode_copies(n * k) : 1;
  std::vector<TensorStorage> w8, w16;
  for (std::int64_t c = 0; c < copies; ++c) w8.push_back(make({n, k}, kE4M3));
  for (std::int64_t c = 0; c < (m <= 16 ? decode_copies(2 * n * k) : 1); ++c) {
    w16.push_back(make({n, k}, DataType::kBFloat16));
  }
  double best_fp8 = 1e30, best_bf16 = 1e30, best_copy = 1e30, copy_bytes = bench::copy_64_mib();
  std::size_t next8 = 0, next16 = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    ops::scaled_mm(x8, w8[next8].view().transpose(0, 1), sa, sb, Tensor(), out);
    const auto t1 = Clock::now();
    ops::linear(x16, w16[next16], Tensor(), out);
    const auto t2 = Clock::now();
    copy_bytes = bench::copy_64_mib();
    benchmark::ClobberMemory();
    const auto t3 = Clock::now();
    next8 = (next8 + 1) % w8.size(), next16 = (next16 + 1) % w16.size();
    best_fp8 = std::min(best_fp8, std::chrono::duration<double>(t1 - t0).count());
    best_bf16 = std::min(best_bf16, std::chrono::duration<double>(t2 - t1).count());
    best_copy = std::min(best_copy, std::chrono::duration<double>(t3 - t2).count());
  }
  const double flops =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double weight_rate = static_cast<double>(n * k) / best_fp8;
  state.counters["flops_per_second"] = flops / best_fp8;
  state.counters["bf16_flops_per_second"] = flops / best_bf16;
  state.counters["of_bf16"] = best_bf16 / best_fp8;
  state.counters["weight_bytes_per_second"] = weight_rate;
  state.counters["bf16_weight_bytes_per_second"] = 2.0 * static_cast<double>(n * k) / best_bf16;
  state.counters["copy_bytes_per_second"] = copy_bytes / best_copy;
  state.counters["copy_fraction"] = weight_rate / (copy_bytes / best_copy);
  state.counters["tokens_per_second"] = static_cast<double>(m) / best_fp8;
  state.counters["bf16_tokens_per_second"] = static_cast<double>(m) / best_bf16;
}

void linear_cases(benchmark::internal::Benchmark* b) {
  for (int dtype : {0, 1}) {
    for (int index : {0, 1}) {
      b->Args({dtype, index, 2048, 2048, 2048});
      b->Args({dtype, index, 1, 4096, 4096});
      b->Args({dtype, index, 16, 4096, 4096});
    }
  }
}

BENCHMARK(BM_linear)->Apply(linear_cases)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_linear_packed)
    ->ArgsProduct({{0, 1}, {1, 16}, {4096}, {4096}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
// The 1.1B decoder's prefill of 32 tokens (bench/llamacpp_report.py): its gate-up and down
// projections, bfloat16, against BM_linear_quantized's rows of the same shapes.
BENCHMARK(BM_linear_packed)
    ->Args({1, 32, 11264, 2048})
    ->Args({1, 32, 2048, 5632})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_scaled_mm)
    ->ArgsProduct({{0, 1}, {1, 2, 4, 8, 16}, {4096}, {4096}})
    ->Args({0, 2048, 2048, 2048})
    ->Args({1, 2048, 2048, 2048})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_linear_quantized)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}, {1, 16}, {4096}, {4096}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_linear_quantized)
    ->ArgsProduct({{0, 2}, {1}, {32}, {11264}, {2048}})
    ->ArgsProduct({{0, 2}, {1}, {32}, {2048}, {5632}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tileops

BENCHMARK_MAIN();
