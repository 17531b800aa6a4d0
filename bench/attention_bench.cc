// Attention against this machine's ceilings, measured in the same run (bench/ceilings.cc: the
// float32 FMA peak, the bfloat16 multiply-accumulate peak, the copy bandwidth), causal prefill
// (flash_attention, H = 8, S = 2048, D = 128) and decode (paged_attention, B = 8, H = 32,
// Hkv = 32 or 8, context 4096, D = 128, block size 16). Counters: flops_per_second (useful
// FLOPs: 4·S·S·D·H / 2 for causal prefill) and kv_bytes_per_second (the cached K and V bytes a
// decode step must read; the median step, alternated with copies whose median rate is
// copy_bytes_per_second).
// BM_tl_prefill and BM_tl_decode time the tl implementation (index 1) against the native one
// (index 0), call by call alternated, and report the ratio of their medians, tl_of_native
// (bench/tl_attention_report.py).
// Run: TILEOPS_NUM_THREADS=2 build/release/bench/attention_bench (bench/attention_report.py does).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
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

DataType dtype_of(std::int64_t code) {
  return code == 0 ? DataType::kFloat32 : code == 1 ? DataType::kBFloat16 : DataType::kFloat16;
}

// Args: dtype (0 float32, 1 bfloat16, 2 float16), heads, sequence length, head size.
void BM_prefill(benchmark::State& state) {
  const DataType dtype = dtype_of(state.range(0));
  const std::int64_t h = state.range(1), s = state.range(2), d = state.range(3);
  TensorStorage q = make({s, h, d}, dtype), k = make({s, h, d}, dtype), v = make({s, h, d}, dtype);
  TensorStorage out = make({s, h, d}, dtype);
  ops::AttentionAttributes attrs;
  attrs.num_heads = h, attrs.num_kv_heads = h, attrs.head_size = d, attrs.causal = true;
  for (auto _ : state) ops::flash_attention(q, k, v, Tensor(), Tensor(), Tensor(), attrs, out);
  const double useful = 4.0 * static_cast<double>(s * s * d * h) / 2.0;
  state.counters["flops_per_second"] =
      benchmark::Counter(useful, benchmark::Counter::kIsIterationInvariantRate);
}

// Args: dtype, batch, heads, kv heads, context, head size. Block size 16, blocks shuffled.
void BM_decode(benchmark::State& state) {
  const DataType dtype = dtype_of(state.range(0));
  const std::int64_t b = state.range(1), h = state.range(2), hkv = state.range(3);
  const std::int64_t ctx_len = state.range(4), d = state.range(5), bs = 16;
  const std::int64_t per_seq = ctx_len / bs, blocks = b * per_seq;
  TensorStorage q = make({b, h, d}, dtype), out = make({b, h, d}, dtype);
  TensorStorage kc = make({blocks, bs, hkv, d}, dtype), vc = make({blocks, bs, hkv, d}, dtype);
  TensorStorage lens({b}, DataType::kInt32), table({b, per_seq}, DataType::kInt32);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(3));
  std::memcpy(table.data(), ids.data(), ids.size() * sizeof(std::int32_t));
  for (std::int64_t i = 0; i < b; ++i) static_cast<std::int32_t*>(lens.data())[i] = ctx_len;
  ops::AttentionAttributes attrs;
  attrs.num_heads = h, attrs.num_kv_heads = hkv, attrs.head_size = d;
  // Each step alternates with a copy (ceilings.h): the ratio of their medians is the bar.
  const bench::Medians m = bench::alternate_with_copy(
      state, [&] { ops::paged_attention(q, kc, vc, lens, table, attrs, out); });
  if (m.work_seconds <= 0) return;
  state.counters["kv_bytes_per_second"] =
      static_cast<double>(kc.bytes() + vc.bytes()) / m.work_seconds;
  state.counters["copy_bytes_per_second"] = m.copy_bytes / m.copy_seconds;
}

// The median seconds of `native` and `tl`, run alternately once each per iteration (a shared
// machine's drift cancels out of their ratio).
template <class Native, class Tl>
void alternate_implementations(benchmark::State& state, Native&& native, Tl&& tl) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> a, b;
  native(), tl();  // compiles the tl kernel and touches the buffers outside the timing
  for (auto _ : state) {
    const auto t0 = Clock::now();
    native();
    const auto t1 = Clock::now();
    tl();
    const auto t2 = Clock::now();
    a.push_back(std::chrono::duration<double>(t1 - t0).count());
    b.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  const auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double native_s = median(a), tl_s = median(b);
  state.counters["native_ms"] = 1e3 * native_s;
  state.counters["tl_ms"] = 1e3 * tl_s;
  state.counters["tl_of_native"] = native_s / tl_s;
}

// Args: dtype, heads, kv heads, sequence length, head size: causal prefill, tl against native.
void BM_tl_prefill(benchmark::State& state) {
  const DataType dtype = dtype_of(state.range(0));
  const std::int64_t h = state.range(1), hkv = state.range(2), s = state.range(3);
  const std::int64_t d = state.range(4);
  TensorStorage q = make({s, h, d}, dtype), k = make({s, hkv, d}, dtype);
  TensorStorage v = make({s, hkv, d}, dtype), out = make({s, h, d}, dtype);
  ops::AttentionAttributes attrs;
  attrs.num_heads = h, attrs.num_kv_heads = hkv, attrs.head_size = d, attrs.causal = true;
  const auto op = [&](int index) {
    return ops::FlashAttention(q, k, v, Tensor(), Tensor(), Tensor(), attrs, out, index);
  };
  const ops::FlashAttention native = op(0), tl = op(1);
  alternate_implementations(
      state, [&] { native(q, k, v, Tensor(), Tensor(), Tensor(), out); },
      [&] { tl(q, k, v, Tensor(), Tensor(), Tensor(), out); });
}

// Args as BM_decode's: paged decode, tl against native.
void BM_tl_decode(benchmark::State& state) {
  const DataType dtype = dtype_of(state.range(0));
  const std::int64_t b = state.range(1), h = state.range(2), hkv = state.range(3);
  const std::int64_t ctx_len = state.range(4), d = state.range(5), bs = 16;
  const std::int64_t per_seq = ctx_len / bs, blocks = b * per_seq;
  TensorStorage q = make({b, h, d}, dtype), out = make({b, h, d}, dtype);
  TensorStorage kc = make({blocks, bs, hkv, d}, dtype), vc = make({blocks, bs, hkv, d}, dtype);
  TensorStorage lens({b}, DataType::kInt32), table({b, per_seq}, DataType::kInt32);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(3));
  std::memcpy(table.data(), ids.data(), ids.size() * sizeof(std::int32_t));
  for (std::int64_t i = 0; i < b; ++i) static_cast<std::int32_t*>(lens.data())[i] = ctx_len;
  ops::AttentionAttributes attrs;
  attrs.num_heads = h, attrs.num_kv_heads = hkv, attrs.head_size = d;
  const auto op = [&](int index) {
    return ops::PagedAttention(q, kc, vc, lens, table, attrs, out, Tensor(), Tensor(), index);
  };
  const ops::PagedAttention native = op(0), tl = op(1);
  alternate_implementations(
      state, [&] { native(q, kc, vc, lens, table, out); },
      [&] { tl(q, kc, vc, lens, table, out); });
}

BENCHMARK(BM_prefill)
    ->Args({0, 8, 2048, 128})
    ->Args({1, 8, 2048, 128})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_decode)
    ->Args({0, 8, 32, 32, 4096, 128})
    ->Args({0, 8, 32, 8, 4096, 128})
    ->Args({1, 8, 32, 32, 4096, 128})
    ->Args({1, 8, 32, 8, 4096, 128})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
// The bars of issue #38: B1 H8 S2048 D128 and GQA 32/8, float32 and bfloat16; decode B8 H32/8.
BENCHMARK(BM_tl_prefill)
    ->Args({0, 8, 8, 2048, 128})
    ->Args({1, 8, 8, 2048, 128})
    ->Args({0, 32, 8, 2048, 128})
    ->Args({1, 32, 8, 2048, 128})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tl_decode)
    ->Args({0, 8, 32, 8, 4096, 128})
    ->Args({1, 8, 32, 8, 4096, 128})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tileops

BENCHMARK_MAIN();
