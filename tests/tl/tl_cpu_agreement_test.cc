// The cpu backend against the interpreter on the same inputs: integer and elementwise float
// kernels (float32, float16, every unary and binary op, transcendentals included) must agree
// bit for bit; row reductions, softmax and matmul, which sum in another order, within the ulps
// stated below. Each kernel computes many ops at once so that only a few are compiled.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>

#include "tests/support/scoped_env.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const tl::Options kInterp{.backend = "interp"};
const tl::Options kCpu{.backend = "cpu"};

using Fn = tl::Value (*)(const tl::Value& x, const tl::Value& y);

// Elementwise functions of two float tiles x (any sign) and y (positive), one output row each.
// How exactly the cpu backend reproduces the interpreter: kNative ops are IEEE-exact in float
// (bit-identical for every float dtype); kDouble ops evaluate the interpreter's double formula
// and round once (bit-identical for float32; float16 rounds through float32, within 1 ulp);
// kLibm ops call glibc's vector math library, a few double ulps from the scalar libm the
// interpreter uses (within 1 ulp of the result dtype), except exp, computed in float32 (within
// 2 ulps); kPoly ops (gelu) are a float32 rational approximation, within 8 float32 ulps
// (float16: 1 ulp).
enum Exactness { kNative, kDouble, kLibm, kPoly };
struct FloatFn {
  Fn fn;
  Exactness exactness;
};

const std::vector<FloatFn>& float_fns() {
  static const std::vector<FloatFn> fns = {
      {[](const tl::Value& x, const tl::Value& y) { return x + y; }, kNative},
      {[](const tl::Value& x, const tl::Value& y) { return x - y; }, kNative},
      {[](const tl::Value& x, const tl::Value& y) { return x * y; }, kNative},
      {[](const tl::Value& x, const tl::Value& y) { return x / y; }, kNative},
      {[](const tl::Value& x, const tl::Value& y) { return tl::floordiv(x, y); }, kDouble},
      {[](const tl::Value& x, const tl::Value& y) { return x % y; }, kDouble},
      {[](const tl::Value& x, const tl::Value& y) { return tl::maximum(x, y); }, kNative},
      {[](const tl::Value& x, const tl::Value& y) { return tl::minimum(x, y); }, kNative},
      {[](const tl::Value& x, const tl::Value& y) { return tl::pow(y, x); }, kLibm},
      {[](const tl::Value& x, const tl::Value& y) { return tl::where(x < y, x, y * 2); }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::abs(x); }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::ceil(x); }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::floor(x); }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::round(x * 4); }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::trunc(x); }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::exp(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::exp2(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::expm1(x); }, kLibm},
      {[](const tl::Value&, const tl::Value& y) { return tl::log(y); }, kLibm},
      {[](const tl::Value&, const tl::Value& y) { return tl::log2(y); }, kLibm},
      {[](const tl::Value&, const tl::Value& y) { return tl::log1p(y); }, kLibm},
      {[](const tl::Value&, const tl::Value& y) { return tl::sqrt(y); }, kNative},
      {[](const tl::Value&, const tl::Value& y) { return tl::rsqrt(y); }, kDouble},
      {[](const tl::Value& x, const tl::Value&) { return tl::sin(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::cos(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::tan(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::sinh(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::cosh(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::tanh(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::erf(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::sigmoid(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::relu(x); }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::gelu(x); }, kPoly},
      {[](const tl::Value& x, const tl::Value&) { return tl::gelu(x, true); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::silu(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return tl::softplus(x); }, kLibm},
      {[](const tl::Value& x, const tl::Value&) { return -x; }, kNative},
      {[](const tl::Value& x, const tl::Value&) { return tl::reciprocal(x); }, kNative},
  };
  return fns;
}

// Integer functions of x (any sign) and y (small, nonzero shift counts and divisors included).
const std::vector<Fn>& int_fns() {
  static const std::vector<Fn> fns = {
      [](const tl::Value& x, const tl::Value& y) { return x + y; },
      [](const tl::Value& x, const tl::Value& y) { return x - y; },
      [](const tl::Value& x, const tl::Value& y) { return x * y * 65537; },
      [](const tl::Value& x, const tl::Value& y) { return tl::floordiv(x, y); },
      [](const tl::Value& x, const tl::Value& y) { return x % y; },
      [](const tl::Value& x, const tl::Value& y) { return tl::maximum(x, y); },
      [](const tl::Value& x, const tl::Value& y) { return tl::minimum(x, y); },
      [](const tl::Value& x, const tl::Value& y) { return x & y; },
      [](const tl::Value& x, const tl::Value& y) { return x | y; },
      [](const tl::Value& x, const tl::Value& y) { return x ^ y; },
      [](const tl::Value& x, const tl::Value& y) { return x << y; },
      [](const tl::Value& x, const tl::Value& y) { return x >> y; },
      [](const tl::Value& x, const tl::Value&) { return tl::abs(x); },
      [](const tl::Value& x, const tl::Value&) { return -x; },
      [](const tl::Value& x, const tl::Value&) { return ~x; },
      [](const tl::Value& x, const tl::Value& y) { return tl::where(x < y, x, y); },
      [](const tl::Value& x, const tl::Value& y) { return (x >= y).to(x.dtype()); },
  };
  return fns;
}

// out[f, :] = fns[f](x, y) over n elements, tiles of 64 (so the tail is partial).
tl::Kernel elementwise_kernel(const std::vector<Fn>& fns, const tl::Options& options) {
  return tl::jit(
      "agree_elementwise",
      [&fns](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress out, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n}), ty = tl::tensor(y, {n});
        const tl::Value to = tl::tensor(out, {static_cast<std::int64_t>(fns.size()), n});
        for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(n, 64), tl::block_num())) {
          const tl::Value a = tl::load(tx, {64}, {i * 64});
          const tl::Value b = tl::load(ty, {64}, {i * 64});
          for (std::size_t f = 0; f < fns.size(); ++f) {
            tl::store(tl::reshape(fns[f](a, b), {1, 64}), to,
                      {static_cast<std::int64_t>(f), i * 64});
          }
        }
      },
      options);
}

std::vector<Fn> fns_of(const std::vector<FloatFn>& fns) {
  std::vector<Fn> out;
  for (const FloatFn& f : fns) out.push_back(f.fn);
  return out;
}

void expect_same_bytes(const TensorStorage& a, const TensorStorage& b, const char* what) {
  ASSERT_EQ(a.bytes(), b.bytes());
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  const std::size_t esize = size_of(a.view().dtype());
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < a.bytes(); i += esize) {
    if (std::memcmp(pa + i, pb + i, esize) != 0 && differing++ == 0) first = i / esize;
  }
  EXPECT_EQ(differing, 0u) << what << ": first differing element " << first;
}

// covers: add sub mul div floordiv mod maximum minimum pow where abs ceil floor round trunc exp
// exp2 expm1 log log2 log1p sqrt rsqrt sin cos tan sinh cosh tanh erf sigmoid relu gelu gelu_tanh
// silu softplus negative reciprocal
TEST(TlCpuAgreement, FloatElementwiseBitIdenticalOrWithinOneUlp) {
  std::mt19937_64 rng(7);
  const std::int64_t n = 1000;
  static const std::vector<Fn> fns = fns_of(float_fns());
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    const auto rows = static_cast<std::int64_t>(fns.size());
    TensorStorage x = random_tensor({n}, dtype, rng, Layout::kContiguous, -4, 4);
    TensorStorage y = random_tensor({n}, dtype, rng, Layout::kContiguous, 0.25, 3);
    TensorStorage expected = poisoned({rows, n}, dtype), actual = poisoned({rows, n}, dtype);
    elementwise_kernel(fns, kInterp).launch(3, x, y, expected, n);
    elementwise_kernel(fns, kCpu).launch(3, x, y, actual, n);
    const std::vector<double> e = to_doubles(expected), a = to_doubles(actual);
    const double ulp = dtype == DataType::kFloat32 ? 0x1p-22 : 0x1p-10;  // 2 ulps (f32), 1 (f16)
    for (std::int64_t r = 0; r < rows; ++r) {
      const Exactness how = float_fns()[static_cast<std::size_t>(r)].exactness;
      const bool exact = how == kNative || (how == kDouble && dtype == DataType::kFloat32);
      std::int64_t bad = 0;
      for (std::int64_t i = r * n; i < (r + 1) * n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const bool same = std::memcmp(&e[k], &a[k], sizeof(double)) == 0;
        const double tol = how == kPoly && dtype == DataType::kFloat32
                               ? 8 * std::ldexp(1.0, std::ilogb(e[k]) - 23)
                               : ulp * std::fabs(e[k]);
        bad += exact ? !same : !(same || std::fabs(a[k] - e[k]) <= tol + 1e-30);
      }
      EXPECT_EQ(bad, 0) << name_of(dtype) << " function " << r << (exact ? " (exact)" : "");
    }
  }
}

// Runs f over xs on both backends and checks the cpu result against the interpreter's: NaN,
// infinities and zeros bit for bit, anything else within `ulps` ulps of the interpreter's value
// (subnormal ulps counted as 2^-149) plus `slack`. Reports the first disagreement.
void expect_float32_agreement(const Fn& f, const std::vector<double>& xs, int blocks, double ulps,
                              double slack) {
  const auto n = static_cast<std::int64_t>(xs.size());
  TensorStorage x({n}, DataType::kFloat32);
  from_doubles(x, xs);
  const std::vector<Fn> fns = {f};
  TensorStorage e = poisoned({1, n}, DataType::kFloat32), a = poisoned({1, n}, DataType::kFloat32);
  elementwise_kernel(fns, kInterp).launch(blocks, x, x, e, n);
  elementwise_kernel(fns, kCpu).launch(blocks, x, x, a, n);
  const auto* pe = static_cast<const float*>(e.data());
  const auto* pa = static_cast<const float*>(a.data());
  for (std::int64_t i = 0; i < n; ++i) {
    const bool special = std::isnan(pe[i]) || std::isinf(pe[i]) || pe[i] == 0;
    const double ulp =
        std::max<double>(std::fabs(std::nextafter(pe[i], INFINITY) - pe[i]), 0x1p-149);
    const bool ok = special ? std::memcmp(&pe[i], &pa[i], 4) == 0
                            : std::fabs(pa[i] - pe[i]) <= ulps * ulp + slack;
    if (!ok) {
      ADD_FAILURE() << xs[i] << ": " << pe[i] << " vs " << pa[i];
      return;
    }
  }
}

// exp is the one function computed in float32: its edges (overflow to inf, gradual underflow,
// infinities, NaN) against the interpreter's double exp rounded once.
TEST(TlCpuAgreement, Float32ExpEdges) {
  const std::vector<double> xs = {-INFINITY, INFINITY, NAN,  88.72, 88.73, 89.5, -87.3, -95.5,
                                  -103.9,    -104.5,   -150, 0,     -0.0,  1e-8, 0.5,   20.25};
  expect_float32_agreement([](const tl::Value& v, const tl::Value&) { return tl::exp(v); }, xs, 1,
                           2, 0);
}

// gelu is a float32 rational approximation: a dense sweep of [-14, 14] (where x Phi(x) leaves
// the normal range) and the edges against the interpreter's 0.5 x erfc(-x / sqrt 2) rounded once.
TEST(TlCpuAgreement, Float32GeluSweep) {
  std::vector<double> xs = {-INFINITY, INFINITY, NAN, 0, -0.0, 1e-30, -1e-30, 0.75, -0.75, 20, -20};
  for (int i = 0; i <= 28000; ++i) xs.push_back(-14 + i * 0.001 + 1e-7 * (i % 7));
  expect_float32_agreement([](const tl::Value& v, const tl::Value&) { return tl::gelu(v); }, xs, 2,
                           8, 0x1p-126 * 0x1p-20);
}

// gelu's tanh form where 1 + tanh u cancels (x below about -5.5, down to where the result
// underflows): the cpu backend within 1 ulp of the interpreter, and the interpreter within 2 ulps
// of x e^(2u) / (1 + e^(2u)) in long double (0.5 x (1 + tanh u) in double lost every digit there).
TEST(TlCpuAgreement, Float32GeluTanhForLargeNegativeInputs) {
  std::vector<double> xs;
  for (int i = 0; i <= 2000; ++i) xs.push_back(-12 + i * 0.004);
  const Fn gelu_tanh = [](const tl::Value& v, const tl::Value&) { return tl::gelu(v, true); };
  expect_float32_agreement(gelu_tanh, xs, 2, 1, 0);
  const auto n = static_cast<std::int64_t>(xs.size());
  TensorStorage x({n}, DataType::kFloat32), out = poisoned({1, n}, DataType::kFloat32);
  from_doubles(x, xs);
  elementwise_kernel({gelu_tanh}, kInterp).launch(1, x, x, out, n);
  const auto* got = static_cast<const float*>(out.data());
  for (std::int64_t i = 0; i < n; ++i) {
    const auto d = static_cast<long double>(static_cast<const float*>(x.data())[i]);
    const long double t = std::exp(2 * 0.79788456080286535588L * (d + 0.044715L * d * d * d));
    const auto want = static_cast<float>(d * t / (1 + t));
    const double ulp = std::max<double>(std::fabs(std::nextafter(want, INFINITY) - want), 0x1p-149);
    ASSERT_LE(std::fabs(static_cast<double>(got[i]) - want), 2 * ulp) << xs[i];
  }
}

// gelu on every 4099th float32 bit pattern (about a million inputs: both signs, every binade,
// subnormals, infinities, NaNs) against 0.5 x erfc(-x / sqrt 2) in float64 rounded once, the
// interpreter's formula: within 8 ulps (2^-149 per ulp below the normal range, plus 2^-146),
// NaN (the input's, quieted), infinities and zeros bit for bit. Every float32 input was checked
// the same way once (bench/results/tl-cpu.md): at most 8 ulps.
TEST(TlCpuAgreement, Float32GeluEveryNthFloat) {
  std::vector<float> xs;
  append_every_nth_float(xs, 4099);
  const auto n = static_cast<std::int64_t>(xs.size());
  TensorStorage x({n}, DataType::kFloat32);
  std::memcpy(x.data(), xs.data(), xs.size() * 4);
  TensorStorage out = poisoned({1, n}, DataType::kFloat32);
  elementwise_kernel({[](const tl::Value& v, const tl::Value&) { return tl::gelu(v); }}, kCpu)
      .launch(2, x, x, out, n);
  const auto* got = static_cast<const float*>(out.data());
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = xs[static_cast<std::size_t>(i)];
    const auto want = static_cast<float>(
        std::isnan(d) ? d + d : 0.5 * d * std::erfc(-d * 0.70710678118654752440));
    const bool special = std::isnan(want) || std::isinf(want) || want == 0;
    const double ulp = std::max<double>(std::fabs(std::nextafter(want, INFINITY) - want), 0x1p-149);
    const bool ok = special ? std::memcmp(&want, &got[i], 4) == 0
                            : std::fabs(static_cast<double>(got[i]) - want) <= 8 * ulp + 0x1p-146;
    if (!ok && bad++ == 0) ADD_FAILURE() << d << ": " << want << " vs " << got[i];
  }
  EXPECT_EQ(bad, 0);
}

// Stores of a kernel whose tensors exceed the last-level cache (here a threshold of 4 MiB, set
// through $TILEOPS_TL_STREAM_BYTES) are streaming stores, which also prefetch the next tile of
// each loop-carried load: the values are the plain loop's, tail included (2 blocks, tiles of
// 2048 strided over them). The generated source shows the threshold it was made with (the
// choice itself is made at run time: 8 MiB of tensors against it).
TEST(TlCpuAgreement, StreamedStoresWithPrefetchAreExact) {
  const std::int64_t n = (std::int64_t{1} << 20) + 37;  // 8 MiB in all
  std::optional<ScopedEnv> stream(std::in_place, "TILEOPS_TL_STREAM_BYTES", "4194304");
  const std::string dump = fresh_dump_dir("tl_streamed_dump");
  const tl::Kernel k = tl::jit(
      "streamed",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int len) {
        const tl::Value tx = tl::tensor(x, {len}), ty = tl::tensor(y, {len});
        for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(len, 2048), tl::block_num())) {
          tl::store(tl::load(tx, {2048}, {i * 2048}) * 2 + 1, ty, {i * 2048});
        }
      },
      tl::Options{.backend = "cpu", .dump_dir = dump});
  TensorStorage x({n}, DataType::kFloat32), y({n}, DataType::kFloat32);
  auto* px = static_cast<float*>(x.data());
  for (std::int64_t i = 0; i < n; ++i) px[i] = static_cast<float>(i % 1000) * 0.25f - 100;
  std::memset(y.data(), 0xFF, y.bytes());  // NaN
  k.launch(2, x, y, n);
  stream.reset();
  const auto* py = static_cast<const float*>(y.data());
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) bad += py[i] != px[i] * 2 + 1;  // exact: x * 2 is
  EXPECT_EQ(bad, 0);
  const std::string source = dumped_source(dump);
  EXPECT_NE(source.find("#define TL_STREAM_BYTES 4194304ll"), std::string::npos)
      << "the kernel was not generated with the test's streaming threshold";
}

// A tl::prefetch hint is fetched over all the loops that follow it, not by the first one alone:
// here the max, exp-and-sum and store loops of a 4096-float softmax row each advance the hint of
// the next row (256 lines), together by at least the whole row, the max loop by at most half.
// The hint replaces the cursor that would fetch the next iteration's row for the load (locality
// 3), though the load comes first. The results are checked too (against float64).
// The same for float16 and bfloat16 stores: narrowed 64 lanes at a time (bfloat16 in registers,
// float16 through a buffer; float32 subnormals take the exact scalar conversion), then streamed
// from a 64-byte boundary on (a row starting 3 elements in has a scalar head), a scalar tail. Bit
// for bit as the interpreter.
TEST(TlCpuAgreement, Streamed16BitStoresAreExact) {
  const std::int64_t n = 300000 + 37;  // 1.8 MiB in all, over the 1 MiB threshold below
  const ScopedEnv stream("TILEOPS_TL_STREAM_BYTES", "1048576");
  const auto make = [](const tl::Options& o) {
    return tl::jit(
        "streamed16",
        [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int len) {
          const tl::Value tx = tl::tensor(x, {len}), ty = tl::tensor(y, {len + 3});
          for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(len, 2048), tl::block_num())) {
            tl::store((tl::load(tx, {2048}, {i * 2048}) * 3).to(y.dtype()), ty, {i * 2048 + 3});
          }
        },
        o);
  };
  std::mt19937_64 rng(23);
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    const std::string dump = fresh_dump_dir("tl_streamed16_dump");
    TensorStorage x = random_tensor({n}, DataType::kFloat32, rng, Layout::kContiguous, -100, 100);
    auto* px = static_cast<float*>(x.data());
    px[5000] = 1e-39f;  // float32 subnormals: AVX512-BF16's conversion would flush them
    px[5001] = -2e-40f;
    TensorStorage e = poisoned({n + 3}, dtype), a = poisoned({n + 3}, dtype);
    make(kInterp).launch(2, x, e, n);
    make(tl::Options{.backend = "cpu", .dump_dir = dump}).launch(2, x, a, n);
    expect_same_bytes(e, a, name_of(dtype).data());
    const char* streamed =
        dtype == DataType::kBFloat16 ? "tl_f2bf64_stream(tl_out" : "tl_stream64_16(tl_out";
    EXPECT_NE(dumped_source(dump).find(streamed), std::string::npos)
        << name_of(dtype) << ": the store was not generated on the streaming path";
  }
}

TEST(TlCpuAgreement, PrefetchHintIsSpreadOverTheLoopsThatFollow) {
  const std::string dump = fresh_dump_dir("tl_hint_dump");
  const tl::Kernel k = tl::jit(
      "hinted_rows",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int rows) {
        const tl::Value tx = tl::tensor(x, {rows, 4096}), ty = tl::tensor(y, {rows, 4096});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, 4096}, {r, 0});
          tl::prefetch(tx, {1, 4096}, {r + tl::block_num(), 0});
          tl::store(tl::softmax(v), ty, {r, 0});
        }
      },
      tl::Options{.backend = "cpu", .dump_dir = dump});
  std::mt19937_64 rng(5);
  TensorStorage x = random_tensor({3, 4096}, DataType::kFloat32, rng, Layout::kContiguous);
  TensorStorage y = poisoned({3, 4096}, DataType::kFloat32);
  k.launch(2, x, y, 3);
  std::vector<double> want = to_doubles(x);
  softmax_rows_f64(want, 4096);
  EXPECT_EQ(compare(y, want, {1e-7, 1e-5}), "");
  const std::string source = dumped_source(dump);
  // Lines fetched per loop: (steps of the loop) x (lines per step). The store's streamed and
  // cached variants are alternatives: the first one counts.
  const std::regex reduce_loop(
      R"(k < (\d+); k \+= (\d+)\) \{ tl_prefetch_lines<(\d), 2>\(tl_hint0)");
  const std::regex store_loop(R"(j \+= 64\) \{ tl_prefetch_lines<(\d), 2>\(tl_hint0)");
  std::vector<std::int64_t> lines;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), reduce_loop);
       it != std::sregex_iterator(); ++it) {
    lines.push_back(std::stoll((*it)[1]) / std::stoll((*it)[2]) * std::stoll((*it)[3]));
  }
  std::smatch store;
  ASSERT_TRUE(std::regex_search(source, store, store_loop)) << "no hint in the store loop";
  lines.push_back(4096 / 64 * std::stoll(store[1]));
  ASSERT_EQ(lines.size(), 3u) << "expected the max, the exp-and-sum and the store loop";
  EXPECT_LE(lines[0], 128) << "the max loop fetches more than half of the hint";
  EXPECT_GE(lines[0] + lines[1] + lines[2], 256) << "the loops do not cover the hinted row";
  EXPECT_EQ(source.find(", 3>("), std::string::npos) << "a cursor fetches the next row too";
}

// Of the two branches of an if, one runs: a hint before it is spread over the larger branch's
// loops, not both (each store loop below takes the whole next row, 4 lines per 64 lanes).
// Both branches scale exactly (by 2 and 1/2).
TEST(TlCpuAgreement, PrefetchHintBeforeAnIfCountsOneBranch) {
  const std::string dump = fresh_dump_dir("tl_hint_if_dump");
  const tl::Kernel k = tl::jit(
      "hinted_branches",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int rows, tl::Bool twice) {
        const tl::Value tx = tl::tensor(x, {rows, 4096}), ty = tl::tensor(y, {rows, 4096});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, 4096}, {r, 0});
          tl::prefetch(tx, {1, 4096}, {r + tl::block_num(), 0});
          tl::if_(
              twice,
              [&] {
                tl::store(v * 2.0f, ty, {r, 0});
              },
              [&] {
                tl::store(v * 0.5f, ty, {r, 0});
              });
        }
      },
      tl::Options{.backend = "cpu", .dump_dir = dump});
  std::mt19937_64 rng(6);
  TensorStorage x = random_tensor({3, 4096}, DataType::kFloat32, rng, Layout::kContiguous);
  const std::vector<double> xs = to_doubles(x);
  for (const bool twice : {true, false}) {
    TensorStorage y = poisoned({3, 4096}, DataType::kFloat32);
    k.launch(2, x, y, 3, twice);
    std::vector<double> want = xs;
    for (double& v : want) v *= twice ? 2 : 0.5;
    EXPECT_EQ(compare(y, want, {0, 0}), "") << twice;
  }
  const std::string source = dumped_source(dump);
  const std::regex store_loop(R"(j \+= 64\) \{ tl_prefetch_lines<(\d), 2>\(tl_hint0)");
  int loops = 0;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), store_loop);
       it != std::sregex_iterator(); ++it, ++loops) {
    EXPECT_EQ((*it)[1], "4") << "store loop " << loops << " takes a share of both branches";
  }
  EXPECT_GE(loops, 2) << "expected a store loop in each branch";
}

// covers: bitwise_and bitwise_or bitwise_xor shl shr bitwise_not ge
TEST(TlCpuAgreement, IntegerElementwiseIsBitIdentical) {
  std::mt19937_64 rng(8);
  const std::int64_t n = 700;
  for (DataType dtype : {DataType::kInt32, DataType::kInt8}) {
    const auto rows = static_cast<std::int64_t>(int_fns().size());
    TensorStorage x = random_tensor({n}, dtype, rng, Layout::kContiguous, -100, 100);
    TensorStorage y = random_tensor({n}, dtype, rng, Layout::kContiguous, -9, 9);
    TensorStorage expected = poisoned({rows, n}, dtype), actual = poisoned({rows, n}, dtype);
    elementwise_kernel(int_fns(), kInterp).launch(16, x, y, expected, n);
    elementwise_kernel(int_fns(), kCpu).launch(16, x, y, actual, n);
    expect_same_bytes(expected, actual, name_of(dtype).data());
  }
}

// Narrow integer reductions along the rows of an 8x16 tile in a loop (wrapping sums and products,
// which GCC 12 miscompiled at -O3 from an int64 accumulator of cast chains) and float -> integer
// -> float casts of values in (-1, 0] (an integer's zero is +0; GCC folded the casts into a
// rounding that kept -0): bit for bit as the interpreter, which matches the direct computation.
TEST(TlCpuAgreement, NarrowIntegerReductionsAndFloatIntegerRoundTrips) {
  const auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_narrow",
        [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows) {
          const tl::Value tx = tl::tensor(x, {rows, 16}),
                          to = tl::tensor(out, {tl::floordiv(rows, 8), 2, 16});
          for (tl::Value t : tl::range(tl::block_idx(), tl::ceildiv(rows, 8), tl::block_num())) {
            const tl::Value v = tl::load(tx, {8, 16}, {t * 8, 0});
            const tl::Value sum = tl::reduce_sum(v, {0}).to(DataType::kInt32);
            const tl::Value prod = tl::reduce_prod(v, {0}).to(DataType::kInt32);
            tl::store(tl::reshape(tl::concat({sum, prod}, 0), {1, 2, 16}), to, {t, 0, 0});
          }
        },
        o);
  };
  std::mt19937_64 rng(12);
  const std::int64_t rows = 24;
  for (DataType dtype : {DataType::kInt8, DataType::kUInt8, DataType::kInt16}) {
    const double lo = dtype == DataType::kUInt8 ? 0 : -6;
    TensorStorage x = random_tensor({rows, 16}, dtype, rng, Layout::kContiguous, lo, lo + 12);
    TensorStorage e = poisoned({rows / 8, 2, 16}, DataType::kInt32),
                  a = poisoned({rows / 8, 2, 16}, DataType::kInt32);
    make(kInterp).launch(2, x, e, rows);
    make(kCpu).launch(2, x, a, rows);
    expect_same_bytes(e, a, name_of(dtype).data());
    const std::vector<double> xv = to_doubles(x);
    std::vector<double> want;
    for (std::int64_t t = 0; t < rows / 8; ++t) {
      for (int which = 0; which < 2; ++which) {
        for (int c = 0; c < 16; ++c) {
          std::int64_t acc = which;
          for (int r = 0; r < 8; ++r) {
            const auto v =
                static_cast<std::int64_t>(xv[static_cast<std::size_t>((t * 8 + r) * 16 + c)]);
            acc = which == 0 ? acc + v : acc * v;
          }
          want.push_back(dtype == DataType::kInt8    ? static_cast<std::int8_t>(acc)
                         : dtype == DataType::kUInt8 ? static_cast<std::uint8_t>(acc)
                                                     : static_cast<std::int16_t>(acc));
        }
      }
    }
    EXPECT_EQ(compare(a, want, {0, 0}), "") << name_of(dtype);
  }
  // One row per integer dtype in between: int64, int32, int16, int8.
  const std::vector<Fn> round_trips = {[](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt64).to(DataType::kFloat32);
                                       },
                                       [](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt32).to(DataType::kFloat32);
                                       },
                                       [](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt16).to(DataType::kFloat32);
                                       },
                                       [](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt8).to(DataType::kFloat32);
                                       }};
  const std::vector<double> xs = {-0.3, -0.0, 0.2, -0.7, -1.2, 0.0, -0.49, 5.0, -0.5, 0.5, -2.5};
  const auto n = static_cast<std::int64_t>(xs.size());
  const auto n_fns = static_cast<std::int64_t>(round_trips.size());
  TensorStorage x({n}, DataType::kFloat32);
  from_doubles(x, xs);
  TensorStorage e = poisoned({n_fns, n}, DataType::kFloat32),
                a = poisoned({n_fns, n}, DataType::kFloat32);
  elementwise_kernel(round_trips, kInterp).launch(1, x, x, e, n);
  elementwise_kernel(round_trips, kCpu).launch(1, x, x, a, n);
  expect_same_bytes(e, a, "float -> integer -> float");
  const auto* got = static_cast<const float*>(a.data());
  for (std::int64_t f = 0; f < n_fns; ++f) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = got[f * n + i],
                  want = std::nearbyint(static_cast<float>(xs[static_cast<std::size_t>(i)]));
      EXPECT_EQ(std::memcmp(&g, &want, 4) == 0 || (want == 0 && g == 0 && !std::signbit(g)), true)
          << "row " << f << ", x " << xs[static_cast<std::size_t>(i)] << ": " << g;
    }
  }
}

// maximum and minimum return their first operand on a tie, +0 against -0 included (as the
// interpreter's fmax/fmin; vmaxps returns the second), bit for bit.
TEST(TlCpuAgreement, MaximumAndMinimumOfSignedZeros) {
  const std::vector<Fn> fns = {
      [](const tl::Value& x, const tl::Value& y) { return tl::maximum(x, y); },
      [](const tl::Value& x, const tl::Value& y) { return tl::minimum(x, y); }};
  const std::vector<double> xs = {0.0, -0.0, 0.0, -0.0, 1.0, -0.0},
                            ys = {-0.0, 0.0, 0.0, -0.0, -0.0, 1.0};
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const auto n = static_cast<std::int64_t>(xs.size());
    TensorStorage x({n}, dtype), y({n}, dtype);
    from_doubles(x, xs);
    from_doubles(y, ys);
    TensorStorage e = poisoned({2, n}, dtype), a = poisoned({2, n}, dtype);
    elementwise_kernel(fns, kInterp).launch(1, x, y, e, n);
    elementwise_kernel(fns, kCpu).launch(1, x, y, a, n);
    expect_same_bytes(e, a, name_of(dtype).data());
    const std::vector<double> got = to_doubles(a);
    for (std::size_t i = 0; i < 4; ++i) {  // the ties: both results are x's zero
      EXPECT_EQ(std::signbit(got[i]), std::signbit(xs[i])) << name_of(dtype) << " max " << i;
      EXPECT_EQ(std::signbit(got[xs.size() + i]), std::signbit(xs[i]))
          << name_of(dtype) << " min " << i;
    }
  }
}

// Integer constants are exact int64 (they went through a double: 2^53 + 1 lost its last bit and
// 2^63 - 1 became -2^63).
TEST(TlCpuAgreement, LargeIntegerConstantsAreExact) {
  const auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_int64_constants",
        [](tl::GlobalAddress x, tl::GlobalAddress out) {
          const tl::Value to = tl::tensor(out, {3});
          const tl::Value v = tl::load(tl::tensor(x, {1}), {1}, {0});
          tl::store(tl::full({1}, std::int64_t{9007199254740993}, DataType::kInt64), to, {0});
          tl::store(tl::full({1}, INT64_MAX, DataType::kInt64), to, {1});
          tl::store(v & INT64_MAX, to, {2});
        },
        o);
  };
  for (const tl::Options& options : {kInterp, kCpu}) {
    TensorStorage x({1}, DataType::kInt64), out({3}, DataType::kInt64);
    *static_cast<std::int64_t*>(x.data()) = -1;
    std::memset(out.data(), 0, out.bytes());
    make(options).launch(1, x, out);
    const auto* got = static_cast<const std::int64_t*>(out.data());
    EXPECT_EQ(got[0], 9007199254740993) << options.backend;
    EXPECT_EQ(got[1], INT64_MAX) << options.backend;
    EXPECT_EQ(got[2], INT64_MAX) << options.backend;
  }
}

// Distance in float32 ulps (both finite).
std::int64_t ulps(float a, float b) {
  std::int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = static_cast<std::int32_t>(0x80000000u - static_cast<std::uint32_t>(ia));
  if (ib < 0) ib = static_cast<std::int32_t>(0x80000000u - static_cast<std::uint32_t>(ib));
  return std::abs(static_cast<std::int64_t>(ia) - ib);
}

// covers: reduce_sum reduce_max reduce_mean softmax rms_norm matmul_acc
TEST(TlCpuAgreement, ReductionsSoftmaxAndMatmulWithinUlps) {
  // Rows of 300 (tiles of 512, padded with 0 / -inf where it matters): sums, max, mean, softmax,
  // rms_norm, the sum of exp (its own loop; softmax's rides along the exp's); then a 64x64x64
  // matmul_acc over two k steps.
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_rows",
        [](tl::GlobalAddress x, tl::GlobalAddress g, tl::GlobalAddress out, tl::GlobalAddress a,
           tl::GlobalAddress b, tl::GlobalAddress c, tl::Int rows) {
          const tl::Value tx = tl::tensor(x, {rows, 300}), tg = tl::tensor(g, {300});
          const tl::Value to = tl::tensor(out, {rows, 6, 300});
          for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, 512}, {r, 0});
            const tl::Value m = tl::load(tx, {1, 512}, {r, 0}, -INFINITY);
            const tl::Value gamma = tl::load(tg, {512}, {0});
            const tl::Value outs[] = {
                tl::broadcast_to(tl::reduce_sum(v, {1}, true), {1, 512}),
                tl::broadcast_to(tl::reduce_max(m, {1}, true), {1, 512}),
                tl::broadcast_to(tl::reduce_mean(v, {1}, true), {1, 512}),
                tl::softmax(m),
                tl::rms_norm(v, gamma, 1e-6),
                tl::broadcast_to(tl::reduce_sum(tl::exp(m), {1}, true), {1, 512})};
            for (int k = 0; k < 6; ++k) {
              tl::store(tl::reshape(outs[k], {1, 1, 512}), to, {r, k, 0});
            }
          }
          const tl::Value ta = tl::tensor(a, {64, 128}), tb = tl::tensor(b, {128, 64});
          tl::Var acc = tl::zeros({64, 64}, DataType::kFloat32);
          for (tl::Value k : tl::range(0, 2)) {
            acc = tl::matmul_acc(acc, tl::load(ta, {64, 64}, {0, k * 64}),
                                 tl::load(tb, {64, 64}, {k * 64, 0}));
          }
          tl::store(acc, tl::tensor(c, {64, 64}), {0, 0});
        },
        o);
  };
  std::mt19937_64 rng(9);
  const std::int64_t rows = 64;
  const auto f32 = DataType::kFloat32;
  TensorStorage x = random_tensor({rows, 300}, f32, rng), g = random_tensor({300}, f32, rng);
  TensorStorage a = random_tensor({64, 128}, f32, rng), b = random_tensor({128, 64}, f32, rng);
  TensorStorage e = poisoned({rows, 6, 300}, f32), o = poisoned({rows, 6, 300}, f32);
  TensorStorage ce = poisoned({64, 64}, f32), co = poisoned({64, 64}, f32);
  make(kInterp).launch(3, x, g, e, a, b, ce, rows);
  make(kCpu).launch(3, x, g, o, a, b, co, rows);
  const auto* pe = static_cast<const float*>(e.data());
  const auto* po = static_cast<const float*>(o.data());
  // Sums and means: one rounding of a double sum either way (<= 1 ulp apart); max exact;
  // softmax (float32 exp, then a sum) within 4 ulps; rms_norm divides by a sum (<= 2 ulps); sums
  // of exp add blocks of 64 in float32 (relative error <= 3 * 2^-24 before the rounding) of
  // terms within 2 ulps: within 4 ulps (docs/tile-language.md).
  const std::int64_t kMaxUlps[] = {1, 0, 1, 4, 2, 4};
  for (std::int64_t r = 0; r < rows; ++r) {
    for (int k = 0; k < 6; ++k) {
      for (int j = 0; j < 300; ++j) {
        const std::size_t i = static_cast<std::size_t>((r * 6 + k) * 300 + j);
        ASSERT_LE(ulps(pe[i], po[i]), kMaxUlps[k])
            << "row " << r << " output " << k << " col " << j << ": " << pe[i] << " vs " << po[i];
      }
    }
  }
  // matmul: float32 FMAs against the interpreter's double sums, 128 terms in [-2, 2).
  EXPECT_EQ(compare(co, to_doubles(ce), dot_tolerance(f32, 128)), "");
}

// Row max and min take a plain max loop and rerun a row the exact way when a sum of its elements
// is NaN: rows holding NaN (in the vector part and in the scalar tail of 100 = 3 * 32 + 4),
// infinities of both signs, only -inf, and finite values whose sum overflows, each against the
// interpreter (NaN for NaN, bit for bit otherwise).
TEST(TlCpuAgreement, RowMaxAndMinWithNaNAndInfinities) {
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_row_extremes",
        [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows) {
          const tl::Value tx = tl::tensor(x, {rows, 100}), to = tl::tensor(out, {rows, 2});
          for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, 100}, {r, 0}) * 2;  // fused into the loops
            tl::store(tl::reduce_max(v, {1}, true), to, {r, 0});
            tl::store(tl::reduce_min(v, {1}, true), to, {r, 1});
          }
        },
        o);
  };
  const std::int64_t rows = 8;
  std::mt19937_64 rng(21);
  TensorStorage x = random_tensor({rows, 100}, DataType::kFloat32, rng);
  auto* px = static_cast<float*>(x.data());
  px[1 * 100 + 50] = NAN;
  px[2 * 100 + 7] = INFINITY;
  px[2 * 100 + 60] = -INFINITY;
  px[3 * 100 + 98] = NAN;
  for (int j = 0; j < 100; ++j) px[4 * 100 + j] = -INFINITY;
  for (int j = 0; j < 100; ++j) px[5 * 100 + j] = j % 2 == 0 ? 1e38f : -1e38f;
  px[5 * 100 + 3] = -INFINITY;
  px[6 * 100 + 31] = INFINITY;
  TensorStorage e = poisoned({rows, 2}, DataType::kFloat32);
  TensorStorage a = poisoned({rows, 2}, DataType::kFloat32);
  make(kInterp).launch(3, x, e, rows);
  make(kCpu).launch(3, x, a, rows);
  const auto* pe = static_cast<const float*>(e.data());
  const auto* pa = static_cast<const float*>(a.data());
  for (std::int64_t i = 0; i < rows * 2; ++i) {
    if (std::isnan(pe[i])) {
      EXPECT_TRUE(std::isnan(pa[i])) << "row " << i / 2 << " output " << i % 2 << ": " << pa[i];
    } else {
      EXPECT_EQ(std::memcmp(&pe[i], &pa[i], 4), 0)
          << "row " << i / 2 << " output " << i % 2 << ": " << pe[i] << " vs " << pa[i];
    }
  }
  EXPECT_TRUE(std::isnan(pe[2]) && std::isnan(pe[6]));  // the rows test what they say
  EXPECT_EQ(pe[4], INFINITY);
  EXPECT_EQ(pe[5], -INFINITY);
}

// Integer row maxima and minima (the vectorised loops of the cpu backend, 128 bytes of
// accumulators; 300 lanes leave a tail for every width) agree with the interpreter and with the
// values themselves, extremes of each dtype included.
TEST(TlCpuAgreement, IntegerRowMaxAndMin) {
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_int_extremes",
        [](tl::GlobalAddress x, tl::GlobalAddress out) {
          const tl::Value v = tl::load(tl::tensor(x, {2, 300}), {2, 300}, {0, 0}) ^ 1;  // fused
          tl::store(tl::concat({tl::reduce_max(v, {1}), tl::reduce_min(v, {1})}, 0),
                    tl::tensor(out, {4}), {0});
        },
        o);
  };
  std::mt19937_64 rng(22);
  for (DataType dtype :
       {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64}) {
    const double lo = dtype == DataType::kUInt8 ? 0 : -100,
                 hi = dtype == DataType::kUInt8 ? 250 : 100;
    TensorStorage x = random_tensor({2, 300}, dtype, rng, Layout::kContiguous, lo, hi);
    std::vector<double> xv = to_doubles(x);
    // Row 0 reaches both ends of the dtype's range (the accumulators' initial values).
    const double top = dtype == DataType::kUInt8 ? 255
                       : dtype == DataType::kInt64
                           ? 9.2233720368547758e18
                           : std::ldexp(1.0, 8 * static_cast<int>(size_of(dtype)) - 1) - 1;
    const double bottom = dtype == DataType::kUInt8 ? 0 : -top - 1;
    if (dtype != DataType::kInt64) {  // int64's ends are not doubles
      xv[17] = top;
      xv[299] = bottom;
    }
    from_doubles(x, xv);
    TensorStorage e = poisoned({4}, dtype), a = poisoned({4}, dtype);
    make(kInterp).launch(1, x, e);
    make(kCpu).launch(1, x, a);
    expect_same_bytes(e, a, name_of(dtype).data());
    std::vector<double> want(4);
    for (int r = 0; r < 2; ++r) {
      std::vector<double> row;
      for (int j = 0; j < 300; ++j) {
        row.push_back(static_cast<double>(static_cast<std::int64_t>(xv[r * 300 + j]) ^ 1));
      }
      want[r] = *std::max_element(row.begin(), row.end());
      want[2 + r] = *std::min_element(row.begin(), row.end());
    }
    EXPECT_EQ(compare(a, want, {0, 0}), "") << name_of(dtype);
  }
}

// A bitcast of a loaded bfloat16 or float16 tile to int16 reads its bits: every one of the 65536
// patterns as the interpreter gives it (NaNs as the float conversions return them: quieted, or
// float16's canonical NaN), also through a row max of the bits fused into the bitcast.
// A tile stored back to where it was loaded from, computed elementwise (and through a row sum),
// is read in place; one stored one column further on overlaps its own source at another offset
// and must be copied first. Both against the interpreter, bit for bit (float32 products and sums
// of two terms).
TEST(TlCpuAgreement, InPlaceUpdatesReadTheirTileInPlace) {
  constexpr std::int64_t kRows = 5, kWidth = 1000;
  const auto make = [](const tl::Options& o) {
    return tl::jit(
        "in_place",
        [](tl::GlobalAddress x, tl::GlobalAddress y) {
          const tl::Value tx = tl::tensor(x, {kRows, kWidth}), ty = tl::tensor(y, {kRows, kWidth});
          for (tl::Value r : tl::range(tl::block_idx(), kRows, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, kWidth}, {r, 0});
            tl::store(v * 3.0f + tl::reduce_max(v), tx, {r, 0});
            const tl::Value w = tl::load(ty, {1, kWidth - 1}, {r, 0});
            tl::store(w * 2.0f, ty, {r, 1});
          }
        },
        o);
  };
  const std::string dump = fresh_dump_dir("tl_in_place_dump");
  std::mt19937_64 rng(29);
  const TensorStorage x =
      random_tensor({kRows, kWidth}, DataType::kFloat32, rng, Layout::kContiguous);
  const TensorStorage y =
      random_tensor({kRows, kWidth}, DataType::kFloat32, rng, Layout::kContiguous);
  const auto copy = [](const TensorStorage& t) {
    TensorStorage c(t.view().shape(), t.view().dtype());
    std::memcpy(c.data(), t.data(), t.bytes());
    return c;
  };
  TensorStorage xi = copy(x), yi = copy(y), xc = copy(x), yc = copy(y);
  make(kInterp).launch(2, xi, yi);
  make(tl::Options{.backend = "cpu", .dump_dir = dump}).launch(2, xc, yc);
  expect_same_bytes(xi, xc, "in place");
  expect_same_bytes(yi, yc, "shifted");
  const std::string source = dumped_source(dump);
  std::size_t direct = 0;
  for (std::size_t p = source.find("_direct = "); p != std::string::npos;
       p = source.find("_direct = ", p + 1))
    ++direct;
  EXPECT_EQ(direct, 1u) << "only the in-place update's tile is read in place";
}

TEST(TlCpuAgreement, BitcastOfLoaded16BitFloats) {
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_bits16",
        [](tl::GlobalAddress x, tl::GlobalAddress out, tl::GlobalAddress maxima) {
          const tl::Value tx = tl::tensor(x, {1024, 64}), to = tl::tensor(out, {1024, 64});
          const tl::Value tm = tl::tensor(maxima, {1024, 1});
          for (tl::Value r : tl::range(tl::block_idx(), 1024, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, 64}, {r, 0});
            tl::store(v.bitcast(DataType::kInt16), to, {r, 0});
            tl::store(
                tl::reduce_max(tl::load(tx, {1, 64}, {r, 0}).bitcast(DataType::kInt16), {1}, true),
                tm, {r, 0});
          }
        },
        o);
  };
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    TensorStorage x({1024, 64}, dtype);
    auto* bits = static_cast<std::uint16_t*>(x.data());
    for (std::uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<std::uint16_t>(i);
    TensorStorage e = poisoned({1024, 64}, DataType::kInt16),
                  a = poisoned({1024, 64}, DataType::kInt16);
    TensorStorage em = poisoned({1024, 1}, DataType::kInt16),
                  am = poisoned({1024, 1}, DataType::kInt16);
    make(kInterp).launch(4, x, e, em);
    make(kCpu).launch(4, x, a, am);
    expect_same_bytes(e, a, name_of(dtype).data());
    expect_same_bytes(em, am, name_of(dtype).data());
    const std::uint16_t inf = dtype == DataType::kBFloat16 ? 0x7f80 : 0x7c00;
    const auto* got = static_cast<const std::uint16_t*>(a.data());
    for (std::uint32_t i = 0; i < 65536; ++i) {
      if ((i & 0x7fff) > inf) continue;  // NaNs: checked against the interpreter above
      ASSERT_EQ(got[i], i) << name_of(dtype) << " bits " << i;
    }
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
