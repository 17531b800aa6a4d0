// The cpu backend against the interpreter on the same inputs, elementwise: integer and float
// kernels (float32, float16, every unary and binary op, transcendentals included) must agree bit
// for bit, or within the ulps stated below. Each kernel computes many ops at once so that only a
// few are compiled. Reductions: tl_cpu_reduce_agreement_test.cc; memory (streaming stores,
// prefetch hints, in-place tiles): tl_cpu_memory_agreement_test.cc.
#include <cstdlib>
#include <cstring>

#include "tests/tl/tl_cpu_agreement.h"

namespace tileops::testing::tl_test {
namespace {

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

std::vector<Fn> fns_of(const std::vector<FloatFn>& fns) {
  std::vector<Fn> out;
  for (const FloatFn& f : fns) out.push_back(f.fn);
  return out;
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

}  // namespace
}  // namespace tileops::testing::tl_test
