// The SIMD kernels of ops/cpu/simd/elementwise_kernels.h on every SIMD target this build
// dispatches to that the CPU supports. add and mul must equal the scalar float32 operation
// rounded once by core/float16.h (bit for bit; NaN stays NaN, payloads included); swiglu and
// silu must match a float64 reference. Rows start unaligned and have every tail length up to
// several vectors; nothing past a row is written.
#include "src/ops/cpu/simd/elementwise_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/support/reference_ops.h"
#include "tests/support/simd_targets.h"
#include "tileops/core/float16.h"

namespace tileops::ops::cpu {
namespace {

using testing::for_each_simd_target;

// One storage dtype: its element bits as uint32 (float32: the float's bits).
struct Format {
  DataType dtype;
  float (*decode)(std::uint32_t);
  std::uint32_t (*encode)(float);
};
const Format kFormats[] = {
    {DataType::kFloat32, [](std::uint32_t b) { return std::bit_cast<float>(b); },
     [](float v) { return std::bit_cast<std::uint32_t>(v); }},
    {DataType::kFloat16,
     [](std::uint32_t b) { return float16_to_float(static_cast<std::uint16_t>(b)); },
     [](float v) { return std::uint32_t{float_to_float16(v)}; }},
    {DataType::kBFloat16,
     [](std::uint32_t b) { return bfloat16_to_float(static_cast<std::uint16_t>(b)); },
     [](float v) { return std::uint32_t{float_to_bfloat16(v)}; }},
};

// A row of n elements of `format` in raw bytes, every byte 0xAB, with room around it.
struct Row {
  Row(const Format& format, std::size_t n)
      : size(size_of(format.dtype)), bytes((n + 8) * size, 0xAB) {}
  std::uint32_t untouched() const {
    std::uint32_t v = 0;
    std::memset(&v, 0xAB, size);
    return v;
  }
  void* at(std::size_t i) { return bytes.data() + (1 + i) * size; }  // element 0 unaligned
  std::uint32_t get(std::size_t i) {
    std::uint32_t v = 0;
    std::memcpy(&v, at(i), size);
    return v;
  }
  void set(std::size_t i, std::uint32_t v) { std::memcpy(at(i), &v, size); }
  std::size_t size;
  std::vector<unsigned char> bytes;
};

bool is_nan_bits(const Format& f, std::uint32_t bits) { return std::isnan(f.decode(bits)); }

// Random finite values plus zeros, infinities, NaNs with payloads and the largest finites.
std::vector<std::uint32_t> operands(const Format& f, std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> real(-4.0f, 4.0f);
  std::vector<std::uint32_t> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(f.encode(real(rng)));
  const float top = f.dtype == DataType::kFloat16 ? 65504.0f : FLT_MAX;
  // bfloat16 0x7fff: the largest payload, which a carry out of the rounding would turn into -0.
  const std::uint32_t nan_a = f.dtype == DataType::kFloat32   ? 0x7fc01234u
                              : f.dtype == DataType::kFloat16 ? 0x7e55u
                                                              : 0x7fffu;
  const std::uint32_t nan_b = f.dtype == DataType::kFloat32   ? 0xffbfffffu  // signalling
                              : f.dtype == DataType::kFloat16 ? 0xfd01u
                                                              : 0xff81u;
  const std::uint32_t specials[] = {f.encode(0.0f),      f.encode(-0.0f), f.encode(INFINITY),
                                    f.encode(-INFINITY), nan_a,           nan_b,
                                    f.encode(top),       f.encode(-top)};
  for (std::size_t i = 0; i < n; i += 5) v[i] = specials[(i / 5) % 8];
  return v;
}

void check_op(ElementwiseOp op, const Format& f) {
  constexpr std::size_t kN = 203;
  std::mt19937_64 rng(static_cast<std::uint64_t>(op) * 10 + static_cast<std::uint64_t>(f.dtype));
  const auto a = operands(f, kN, rng);
  auto b = operands(f, kN, rng);
  std::rotate(b.begin(), b.begin() + 2, b.end());  // other pairings of the special values
  for (std::size_t n = 0; n <= kN; n = n < 40 ? n + 1 : n + 163) {
    SCOPED_TRACE(n);
    Row x(f, n), y(f, n), out(f, n);
    for (std::size_t i = 0; i < n; ++i) {
      x.set(i, a[i]);
      y.set(i, b[i]);
    }
    elementwise_rows(op, f.dtype, x.at(0), y.at(0), static_cast<std::int64_t>(n), out.at(0));
    for (std::size_t i = 0; i < n; ++i) {
      const float xa = f.decode(a[i]);
      const float yb = f.decode(b[i]);
      const std::uint32_t got = out.get(i);
      if (op == ElementwiseOp::kSwiglu) {
        // silu's limit at -inf is 0 (the float64 formula gives -inf/inf = NaN).
        const double silu = yb == -INFINITY ? 0.0 : testing::reference::silu(yb);
        const double want = xa * silu;
        const double rounded = f.decode(f.encode(static_cast<float>(want)));
        const double g = f.decode(got);
        if (std::isnan(want) || std::isinf(rounded)) {
          ASSERT_TRUE(std::isnan(want) ? std::isnan(g) : g == rounded)
              << xa << " · silu(" << yb << ") = " << g;
        } else {
          // One rounding to the dtype (subnormal float16 steps: 6e-8) after float32 math.
          const double rel = f.dtype == DataType::kFloat32 ? 1e-6 : 1e-2;
          const double abs = f.dtype == DataType::kFloat16 ? 1e-7 : 1e-30;
          ASSERT_LE(std::fabs(g - want), abs + rel * std::fabs(want))
              << xa << " · silu(" << yb << ") = " << g;
        }
        continue;
      }
      const float r = op == ElementwiseOp::kAdd ? xa + yb : xa * yb;
      const std::uint32_t want = f.encode(r);
      if (is_nan_bits(f, want)) {
        ASSERT_TRUE(is_nan_bits(f, got)) << xa << ", " << yb << ": got 0x" << std::hex << got;
      } else {
        ASSERT_EQ(got, want) << xa << ", " << yb;
      }
    }
    for (std::size_t i = n; i < n + 4; ++i) ASSERT_EQ(out.get(i), out.untouched()) << "past end";
  }
}

TEST(ElementwiseKernels, AddMulSwigluOnEveryTargetAndDtype) {
  for_each_simd_target([] {
    for (const Format& f : kFormats) {
      SCOPED_TRACE(name_of(f.dtype));
      for (ElementwiseOp op : {ElementwiseOp::kAdd, ElementwiseOp::kMul, ElementwiseOp::kSwiglu}) {
        SCOPED_TRACE(static_cast<int>(op));
        check_op(op, f);
      }
    }
  });
}

// In place: out is a (and b) exactly.
TEST(ElementwiseKernels, OutMayBeAnInput) {
  std::vector<float> a(37), b(37);
  for (int i = 0; i < 37; ++i) {
    a[i] = static_cast<float>(i) - 18.5f;
    b[i] = 0.25f * static_cast<float>(i);
  }
  std::vector<float> sum = a;
  elementwise_rows(ElementwiseOp::kAdd, DataType::kFloat32, sum.data(), b.data(), 37, sum.data());
  for (int i = 0; i < 37; ++i) EXPECT_EQ(sum[i], a[i] + b[i]);
  std::vector<float> sq = b;
  elementwise_rows(ElementwiseOp::kMul, DataType::kFloat32, sq.data(), sq.data(), 37, sq.data());
  for (int i = 0; i < 37; ++i) EXPECT_EQ(sq[i], b[i] * b[i]);
}

// silu on float32: a dense sweep of [-100, 100] plus extremes within 1e-6 relative error (the
// kernel measures 1.6e-7), or 1e-35 absolute where silu underflows to ~0 (it is exactly 0 below
// -87.3); tails of every length give the same values and never write past the end.
TEST(ElementwiseKernels, SiluOnEveryTarget) {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 5e-4f);
  for (float v : {87.0f, -87.0f, 87.3f, -87.3f, 88.0f, -88.0f, 104.5f, -104.5f, 1e4f, -1e4f,
                  FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 0.0f, -0.0f, INFINITY}) {
    x.push_back(v);
  }
  for_each_simd_target([&] {
    std::vector<float> y(x.size());
    silu_f32(x.data(), static_cast<std::int64_t>(x.size()), y.data());
    int bad = 0;
    for (std::size_t i = 0; i < x.size() && bad < 10; ++i) {
      const double e = testing::reference::silu(x[i]);
      const double err = std::fabs(y[i] - e);
      if (!(y[i] == e || err <= 1e-35 || err <= 1e-6 * std::fabs(e))) {
        ++bad;
        ADD_FAILURE() << "silu(" << x[i] << ") = " << y[i] << ", expected " << e;
      }
    }
    const float nan = NAN;
    float silu_of_nan = 0.0f;
    silu_f32(&nan, 1, &silu_of_nan);
    EXPECT_TRUE(std::isnan(silu_of_nan));
    for (std::size_t n = 0; n <= 40; ++n) {
      std::vector<float> tail(n + 1, -1.0f);
      silu_f32(x.data() + 100001, static_cast<std::int64_t>(n), tail.data());
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(tail[i], y[100001 + i]) << n << " " << i;
      ASSERT_EQ(tail[n], -1.0f) << "wrote past the end";
    }
  });
}

}  // namespace
}  // namespace tileops::ops::cpu
