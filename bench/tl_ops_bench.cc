// The tile-language implementations of the operators ("tl") against the native ones in the same
// run: every memory-bound operator on [4096, 4096] float32 and bfloat16, and gemm 2048³ float32.
// BM_<op>/<dtype>/<implementation index> times one implementation; BM_paired_<op>/<dtype>
// alternates native and tl calls (what the report reads). The kernels are compiled (or loaded
// from the persistent cache) by a warm-up call before timing.
// Run: bench/tl_ops_report.py (writes the table of bench/results/tl-ops.md).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <vector>

#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

constexpr std::int64_t kRows = 4096, kCols = 4096, kGemmSize = 2048;

TensorStorage make(const Dims& shape, DataType dtype) {
  static std::mt19937_64 rng(1);
  return testing::random_tensor(shape, dtype, rng);
}

DataType dtype_arg(const benchmark::State& state) {
  return state.range(0) == 0 ? DataType::kFloat32 : DataType::kBFloat16;
}

// One operator call on fixed random tensors; `amount`: bytes read + written once per call (gemm:
// FLOPs).
struct Case {
  std::vector<TensorStorage> t;
  double amount = 0;
  std::function<void(const Context&)> call;
};

enum Op {
  kAdd,
  kMul,
  kRmsNorm,
  kAddRmsNorm,
  kSwiglu,
  kSiluAndMul,
  kScaledSoftmax,
  kCausalSoftmax,
  kGemm
};

Case make_case(Op op, DataType dt) {
  Case c;
  auto tensors = [&](std::initializer_list<Dims> shapes) {
    for (const Dims& shape : shapes) c.t.push_back(make(shape, dt));
  };
  auto count = [&](std::initializer_list<int> which) {
    for (int i : which) c.amount += static_cast<double>(c.t[static_cast<std::size_t>(i)].bytes());
  };
  const Dims m{kRows, kCols};
  TensorStorage* t = nullptr;
  switch (op) {
    case kAdd:
    case kMul:
      tensors({m, m, m});
      count({0, 1, 2});
      t = c.t.data();
      c.call = [t, op](const Context& ctx) {
        op == kAdd ? ops::add(t[0], t[1], t[2], ctx) : ops::mul(t[0], t[1], t[2], ctx);
      };
      break;
    case kRmsNorm:
      tensors({m, {kCols}, m});
      count({0, 2});
      t = c.t.data();
      c.call = [t](const Context& ctx) { ops::rms_norm(t[0], t[1], 1e-6, t[2], ctx); };
      break;
    case kAddRmsNorm:
      tensors({m, m, {kCols}, m, m});
      count({0, 1, 3, 4});
      t = c.t.data();
      c.call = [t](const Context& ctx) {
        ops::add_rms_norm(t[0], t[1], t[2], 1e-6, t[3], t[4], ctx);
      };
      break;
    case kSwiglu:
      tensors({m, m, m});
      count({0, 1, 2});
      t = c.t.data();
      c.call = [t](const Context& ctx) { ops::swiglu(t[0], t[1], t[2], ctx); };
      break;
    case kSiluAndMul:
      tensors({{kRows, 2 * kCols}, m});
      count({0, 1});
      t = c.t.data();
      c.call = [t](const Context& ctx) { ops::silu_and_mul(t[0], -1, t[1], ctx); };
      break;
    case kScaledSoftmax:
    case kCausalSoftmax:
      tensors({m, m});
      count({0, 1});
      t = c.t.data();
      c.call = [t, op](const Context& ctx) {
        op == kScaledSoftmax ? ops::scaled_softmax(t[0], 0.125, t[1], ctx)
                             : ops::causal_softmax(t[0], t[1], ctx);
      };
      break;
    case kGemm:
      tensors({{kGemmSize, kGemmSize}, {kGemmSize, kGemmSize}, {kGemmSize, kGemmSize}});
      c.amount = 2.0 * kGemmSize * kGemmSize * kGemmSize;
      t = c.t.data();
      c.call = [t](const Context& ctx) {
        ops::gemm(t[0], t[1], 1.0, 0.0, false, false, t[2], ctx);
      };
      break;
  }
  return c;
}

Context with_index(int index) {
  Context ctx;
  ctx.implementation_index = index;
  return ctx;
}

// The tl implementation's index: 1, for gemm 2.
int tl_index(Op op) { return op == kGemm ? 2 : 1; }

// Args: (dtype: 0 float32 / 1 bfloat16, implementation index). Counter: bytes_per_second, for
// gemm FLOPS. One warm-up call (compiles the tl kernel or loads it from the persistent cache).
template <Op kOp>
void BM_op(benchmark::State& state) {
  const Case c = make_case(kOp, dtype_arg(state));
  const Context ctx = with_index(static_cast<int>(state.range(1)));
  c.call(ctx);
  for (auto _ : state) c.call(ctx);
  state.counters[kOp == kGemm ? "FLOPS" : "bytes_per_second"] =
      benchmark::Counter(c.amount, benchmark::Counter::kIsIterationInvariantRate);
}

// Native and tl calls alternate and are timed one by one, so that both sides of the ratio see
// the same minutes of this shared machine (separate benchmarks seconds apart saw it change speed
// by 30%). Arg: dtype. Counters: native and tl rates (median call of each) and ratio (their
// quotient: tl / native).
template <Op kOp>
void BM_paired(benchmark::State& state) {
  const Case c = make_case(kOp, dtype_arg(state));
  const Context native = with_index(0), tl = with_index(tl_index(kOp));
  c.call(native);
  c.call(tl);
  std::vector<double> seconds[2];
  const auto timed = [&](const Context& ctx, std::vector<double>& out) {
    const auto t0 = std::chrono::steady_clock::now();
    c.call(ctx);
    out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  for (auto _ : state) {
    timed(native, seconds[0]);
    timed(tl, seconds[1]);
  }
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double native_rate = c.amount / median(seconds[0]);
  const double tl_rate = c.amount / median(seconds[1]);
  state.counters["native"] = native_rate;
  state.counters["tl"] = tl_rate;
  state.counters["ratio"] = tl_rate / native_rate;
}

// Native (0) and tl (1) for both dtypes, and the paired form; gemm float32, tl index 2.
#define TL_OPS_BENCH(op, name)         \
  BENCHMARK(BM_op<op>)                 \
      ->Name("BM_" name)               \
      ->Args({0, 0})                   \
      ->Args({0, 1})                   \
      ->Args({1, 0})                   \
      ->Args({1, 1})                   \
      ->UseRealTime()                  \
      ->Unit(benchmark::kMillisecond); \
  BENCHMARK(BM_paired<op>)             \
      ->Name("BM_paired_" name)        \
      ->Arg(0)                         \
      ->Arg(1)                         \
      ->UseRealTime()                  \
      ->Unit(benchmark::kMillisecond)
TL_OPS_BENCH(kAdd, "add");
TL_OPS_BENCH(kMul, "mul");
TL_OPS_BENCH(kRmsNorm, "rms_norm");
TL_OPS_BENCH(kAddRmsNorm, "add_rms_norm");
TL_OPS_BENCH(kSwiglu, "swiglu");
TL_OPS_BENCH(kSiluAndMul, "silu_and_mul");
TL_OPS_BENCH(kScaledSoftmax, "scaled_softmax");
TL_OPS_BENCH(kCausalSoftmax, "causal_softmax");
BENCHMARK(BM_op<kGemm>)
    ->Name("BM_gemm")
    ->Args({0, 0})
    ->Args({0, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_paired<kGemm>)
    ->Name("BM_paired_gemm")
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tileops

BENCHMARK_MAIN();
