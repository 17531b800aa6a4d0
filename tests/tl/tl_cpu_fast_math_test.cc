// fast_math on the cpu backend: its exp and exp2 against float64 (within 2 and 1 ulps wherever the
// result is at least e^-86.9 or 2^-125, 0 below, inf above the float range, NaN kept), row sums in
// float32 lanes, a masked row softmax with -inf lanes (inf and NaN keep their meaning: no
// -ffinite-math-only), loading a fast_math kernel leaves the thread's flush-to-zero mode alone, and
// all of it again with clang++ as the compiler.
#include <glob.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tests/support/self_command.h"
#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const tl::Options kFast{.backend = "cpu", .fast_math = true};

// out = exp(x) (or exp2(x)) over n elements, tiles of 64 (the tail is partial).
tl::Kernel exp_kernel(const tl::Options& options, bool base2 = false) {
  return tl::jit(
      base2 ? "fast_exp2" : "fast_exp",
      [base2](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int n) {
        const tl::Value tx = tl::tensor(x, {n}), to = tl::tensor(out, {n});
        for (tl::Value i : tl::range(tl::block_idx(), tl::ceildiv(n, 64), tl::block_num())) {
          const tl::Value v = tl::load(tx, {64}, {i * 64});
          tl::store(base2 ? tl::exp2(v) : tl::exp(v), to, {i * 64});
        }
      },
      options);
}

// The fast_math exp (or exp2) of xs, plus every 65537th float, against float64: NaN for NaN, 0
// below `flush`, inf above the float range, else within `ulps`.
void expect_fast_exp(bool base2, std::vector<float> xs, float flush, double ulps) {
  append_every_nth_float(xs, 65537);
  const auto n = static_cast<std::int64_t>(xs.size());
  TensorStorage x({n}, DataType::kFloat32);
  std::memcpy(x.data(), xs.data(), xs.size() * 4);
  TensorStorage out = poisoned({n}, DataType::kFloat32);
  exp_kernel(kFast, base2).launch(2, x, out, n);
  const auto* got = static_cast<const float*>(out.data());
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = xs[static_cast<std::size_t>(i)];
    const double want =
        base2 ? std::exp2(static_cast<double>(v)) : std::exp(static_cast<double>(v));
    bool ok = false;
    if (std::isnan(v)) {
      ok = std::isnan(got[i]);
    } else if (v < flush) {
      ok = got[i] == 0.0f;
    } else if (want > 0x1.fffffep127) {
      ok = got[i] == INFINITY;
    } else {
      const auto w = static_cast<float>(want);
      ok = std::fabs(got[i] - want) <= ulps * std::fabs(std::nextafter(w, INFINITY) - w);
    }
    if (!ok && bad++ == 0) {
      ADD_FAILURE() << v << ": " << (base2 ? "exp2 " : "exp ") << want << ", got " << got[i];
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(TlCpuFastMath, ExpWithinTwoUlpsAboveTheFlushThreshold) {
  std::vector<float> xs = {-INFINITY, INFINITY, NAN,    88.72f, 88.7228f, 88.73f, 89.5f,  -86.85f,
                           -86.95f,   -87.3f,   -95.5f, 0.0f,   -0.0f,    1e-8f,  -1e-30f};
  for (int i = 0; i <= 180000; ++i) xs.push_back(-90.0f + static_cast<float>(i) * 0.001f);
  expect_fast_exp(false, xs, -86.9f, 2);
}

// exp2 within 1 ulp wherever the result is at least 2^-125 (0 below, inf from 2^128 on): the
// float range's ends and a dense sweep of [-130, 130].
TEST(TlCpuFastMath, Exp2WithinOneUlpAboveTheFlushThreshold) {
  std::vector<float> xs = {-INFINITY, INFINITY, NAN,     127.99f, 128.0f, 128.01f, 1e30f,
                           -125.0f,   -125.01f, -126.0f, -149.5f, 0.0f,   -0.0f,   1e-8f};
  for (int i = 0; i <= 260000; ++i) xs.push_back(-130.0f + static_cast<float>(i) * 0.001f);
  expect_fast_exp(true, xs, -125.0f, 1);
}

// Under fast_math every float32 row sum adds 16 terms per float32 lane between widenings: rows of
// 2300 (35 blocks of 64, so two flushes and a last partial run, then 16-, 8- and 1-lane tails)
// spanning 2^-20..2^20, summed as squares, absolute values and as they are, against float64 sums:
// within 20 float32 roundings relative to the sum of the terms' magnitudes (the square's own, 15
// per lane, 3 in the widening, the last one to float32).
TEST(TlCpuFastMath, RowSumsWithinTwentyRoundingsOfTheMagnitudes) {
  constexpr std::int64_t kWidth = 2300;
  const tl::Kernel k = tl::jit(
      "fast_sums",
      [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows) {
        const tl::Value tx = tl::tensor(x, {rows, kWidth}), to = tl::tensor(out, {rows, 3});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, kWidth}, {r, 0});
          tl::store(tl::reduce_sum(v * v, {1}, true), to, {r, 0});
          tl::store(tl::reduce_sum(tl::abs(v), {1}, true), to, {r, 1});
          tl::store(tl::reduce_sum(v, {1}, true), to, {r, 2});
        }
      },
      kFast);
  const std::int64_t rows = 16;
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> exponent(-20, 20), sign(-1, 1);
  TensorStorage x({rows, kWidth}, DataType::kFloat32);
  auto* px = static_cast<float*>(x.data());
  for (std::int64_t i = 0; i < rows * kWidth; ++i) {
    px[i] = static_cast<float>((sign(rng) < 0 ? -1 : 1) * std::exp2(exponent(rng)));
  }
  TensorStorage out = poisoned({rows, 3}, DataType::kFloat32);
  k.launch(3, x, out, rows);
  const auto* got = static_cast<const float*>(out.data());
  const double bound = 20 * 0x1p-24;
  for (std::int64_t r = 0; r < rows; ++r) {
    double squares = 0, absolute = 0, plain = 0;
    for (std::int64_t j = 0; j < kWidth; ++j) {
      const double v = px[r * kWidth + j];
      squares += v * v;
      absolute += std::fabs(v);
      plain += v;
    }
    EXPECT_NEAR(got[r * 3], squares, bound * squares) << "row " << r;
    EXPECT_NEAR(got[r * 3 + 1], absolute, bound * absolute) << "row " << r;
    EXPECT_NEAR(got[r * 3 + 2], plain, bound * absolute) << "row " << r;
  }
}

// Rows of n with the lanes at and after `visible` masked to -inf before the softmax.
TEST(TlCpuFastMath, MaskedSoftmaxKeepsInfinities) {
  const tl::Kernel kernel = tl::jit(
      "fast_masked_softmax",
      [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows, tl::Int visible) {
        const tl::Value tx = tl::tensor(x, {rows, 64}), to = tl::tensor(out, {rows, 64});
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          const tl::Value v = tl::load(tx, {1, 64}, {r, 0});
          const tl::Value masked = tl::where(tl::arange(64) < visible, v, -INFINITY);
          tl::store(tl::softmax(masked, -1), to, {r, 0});
        }
      },
      kFast);
  const std::int64_t rows = 3, visible = 37;
  std::mt19937_64 rng(11);
  TensorStorage x = random_tensor({rows, 64}, DataType::kFloat32, rng, Layout::kContiguous, -8, 8);
  TensorStorage out = poisoned({rows, 64}, DataType::kFloat32);
  kernel.launch(2, x, out, rows, visible);
  const auto* px = static_cast<const float*>(x.data());
  const auto* po = static_cast<const float*>(out.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY, sum = 0;
    for (std::int64_t j = 0; j < visible; ++j) max = std::max<double>(max, px[r * 64 + j]);
    for (std::int64_t j = 0; j < visible; ++j) sum += std::exp(px[r * 64 + j] - max);
    for (std::int64_t j = 0; j < 64; ++j) {
      const double want = j < visible ? std::exp(px[r * 64 + j] - max) / sum : 0.0;
      EXPECT_NEAR(po[r * 64 + j], want, 1e-6 * want + 1e-30) << "row " << r << " lane " << j;
    }
  }
}

// Conversions stay exact under fast_math (no reassociation folds the runtime's scalings): float32
// to float16 and bfloat16 at the edges of their ranges, bit for bit with the interpreter.
TEST(TlCpuFastMath, NarrowingConversionsAreExact) {
  const auto narrow = [](const tl::Options& options) {
    return tl::jit(
        "fast_narrow",
        [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int n) {
          const tl::Value to = tl::tensor(out, {n});
          tl::store(tl::load(tl::tensor(x, {n}), {64}, {0}).to(out.dtype()), to, {0});
        },
        options);
  };
  const std::vector<double> xs = {65504, 65519,  65520, 98256, -70000,   1e-8, 6e-8, 3e-5,
                                  -2e-7, 3.4e38, -3e38, 1e-40, INFINITY, NAN,  0.1,  -0.0};
  TensorStorage x({64}, DataType::kFloat32);
  std::vector<double> padded(64, 1.0);
  std::copy(xs.begin(), xs.end(), padded.begin());
  from_doubles(x, padded);
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    TensorStorage want = poisoned({64}, dtype), got = poisoned({64}, dtype);
    narrow(tl::Options{.backend = "interp"}).launch(1, x, want, std::int64_t{64});
    narrow(kFast).launch(1, x, got, std::int64_t{64});
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.bytes()), 0) << name_of(dtype);
  }
}

// -ffast-math would link crtfastmath.o into the kernel, whose constructor sets flush-to-zero and
// denormals-are-zero in the thread that loads it: a subnormal product here would become 0.
TEST(TlCpuFastMath, LoadingAKernelKeepsSubnormals) {
  const tl::Kernel kernel = exp_kernel(kFast);
  TensorStorage x({64}, DataType::kFloat32), out({64}, DataType::kFloat32);
  std::memset(x.data(), 0, x.bytes());
  kernel.launch(1, x, out, std::int64_t{64});
  volatile float tiny = 0x1p-120f;
  const float product = tiny * 0x1p-10f;  // 2^-130, subnormal: 2^19 * 2^-149
  std::uint32_t bits = 0;
  std::memcpy(&bits, &product, 4);  // bits: a float compare would see 0 under denormals-are-zero
  EXPECT_EQ(bits, 0x00080000u);
}

// clang++ as the kernel compiler ($TILEOPS_CXX): the tests above pass in a child process with a
// cache of its own (so every kernel compiles with clang's flags). clang 14 rejects some of GCC's
// flags (-fcx-limited-range once made every fast_math kernel fail to compile). scripts/setup.sh
// installs clang-tidy, which brings clang-14 along.
TEST(TlCpuFastMath, KernelsCompileWithClangToo) {
  std::string clang;
  for (const char* pattern : {"/usr/bin/clang++", "/usr/lib/llvm-*/bin/clang++"}) {
    glob_t found;
    if (::glob(pattern, 0, nullptr, &found) == 0 && found.gl_pathc > 0) clang = found.gl_pathv[0];
    ::globfree(&found);
    if (!clang.empty()) break;
  }
  ASSERT_FALSE(clang.empty()) << "needs clang++ (/usr/bin/clang++ or /usr/lib/llvm-*/bin/clang++: "
                                 "Debian's clang-14, which clang-tidy installs)";
  const auto cache =
      std::filesystem::temp_directory_path() / ("tileops_clang_" + std::to_string(::getpid()));
  const std::string command = "TILEOPS_CXX=" + clang + " TILEOPS_CACHE_DIR=" + cache.string() +
                              " " + testing::self_command() +
                              " --gtest_filter='TlCpuFastMath.*:-*Clang*' 2>&1";
  const auto [status, output] = run_command(command);
  std::filesystem::remove_all(cache);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 6 tests"), std::string::npos) << output;
}

}  // namespace
}  // namespace tileops::testing::tl_test
