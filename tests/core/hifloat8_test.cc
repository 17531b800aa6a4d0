// HiF8 specifics: published conversion vectors, the shape of the value grid, the rounding
// (ties away from zero) at the edges, and the value-grid emulation `to_hif8` (CATALOG.md).
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <utility>

#include "tileops/core/float16.h"
#include "tileops/core/float8.h"

namespace tileops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// float32 bits -> HiF8 byte, from the unit tests of Huawei's open-source CANN graph engine
// (github.com/hicann/ge, tests of base/common/math/hif8_t.cc), an implementation of the paper's
// encoding independent of ours.
constexpr std::pair<std::uint32_t, std::uint8_t> kFloat32Vectors[] = {
    {0x3638C290, 0x04}, {0x3698AEB6, 0x05}, {0x36E515DD, 0x06}, {0x371C2FF8, 0x06},
    {0x358B4F67, 0x03}, {0x3F48849E, 0x1D}, {0x3CFDC7CD, 0x54}, {0x3F112A2C, 0x19},
    {0x3F655965, 0x1E}, {0x3E2040ED, 0x3A}, {0x43411383, 0x4E}, {0x438E0E21, 0x60},
    {0x42356389, 0x46}, {0x43B308DB, 0x61}, {0x42536B25, 0x47}, {0x4686C7E7, 0x6C},
    {0x46E1CA4A, 0x6E}, {0x453D6D1B, 0x67}, {0x462B0BBF, 0x6B}, {0x4743505E, 0x6F},
};
// float16 bits -> HiF8 byte, same source.
constexpr std::pair<std::uint16_t, std::uint8_t> kFloat16Vectors[] = {
    {0x0005, 0x01}, {0x0008, 0x02}, {0x002C, 0x04}, {0x0033, 0x05}, {0x008D, 0x06},
    {0x289B, 0x55}, {0x3716, 0x36}, {0x2E79, 0x52}, {0x3B69, 0x1F}, {0x38FC, 0x1A},
    {0x67DF, 0x66}, {0x64F3, 0x64}, {0x658D, 0x65}, {0x6070, 0x62}, {0x691F, 0x67},
    {0x7871, 0x6E}, {0x77AE, 0x6E}, {0x746E, 0x6C}, {0x711B, 0x6B}, {0x79EA, 0x6F},
};

TEST(HiFloat8, MatchesPublishedVectors) {
  for (const auto& [bits, expected] : kFloat32Vectors) {
    const float x = std::bit_cast<float>(bits);
    EXPECT_EQ(double_to_hifloat8(x), expected) << x;
  }
  for (const auto& [bits, expected] : kFloat16Vectors) {
    const float x = float16_to_float(bits);
    EXPECT_EQ(double_to_hifloat8(x), expected) << x;
  }
}

TEST(HiFloat8, ValueGridHasThePapersShape) {
  std::set<double> positive;
  for (int p = 0; p < 256; ++p) {
    const double v = hifloat8_to_float(static_cast<std::uint8_t>(p));
    if (std::isfinite(v) && v > 0) positive.insert(v);
    // Sign symmetry: the sign bit only negates (0x00 / 0x80 are zero / NaN).
    if (p > 0 && p < 128) {
      const double n = hifloat8_to_float(static_cast<std::uint8_t>(p | 0x80));
      EXPECT_EQ(n, -v) << p;
    }
  }
  EXPECT_EQ(positive.size(), 126u);  // 127 nonzero magnitudes minus the Inf pattern
  EXPECT_EQ(*positive.begin(), 0x1p-22);
  EXPECT_EQ(*positive.rbegin(), 32768.0);
  // 3 mantissa bits for |E| <= 3, 2 for 4..7, 1 for 8..15, and pure powers of two (the
  // denormal mode) for 2^-22 .. 2^-16: 38 binades in all.
  for (int e = -22; e <= 15; ++e) {
    const int a = std::abs(e);
    const int m = e < -15 ? 0 : a <= 3 ? 3 : a <= 7 ? 2 : 1;
    for (int k = 0; k < (1 << m); ++k) {
      const double v = std::ldexp(1.0 + std::ldexp(k, -m), e);
      if (e == 15 && k == 1) continue;  // 49152's pattern is Inf
      EXPECT_EQ(positive.count(v), 1u) << v;
    }
  }
  EXPECT_EQ(hifloat8_to_float(0x00), 0.0f);
  EXPECT_FALSE(std::signbit(hifloat8_to_float(0x00)));
  EXPECT_TRUE(std::isnan(hifloat8_to_float(0x80)));
  EXPECT_EQ(hifloat8_to_float(0x6f), INFINITY);
  EXPECT_EQ(hifloat8_to_float(0xef), -INFINITY);
}

TEST(HiFloat8, RoundsTiesAwayAndOverflowsAt40960) {
  EXPECT_EQ(hifloat8_to_float(double_to_hifloat8(1.0625)), 1.125f);  // tie of 1 and 1.125
  EXPECT_EQ(hifloat8_to_float(double_to_hifloat8(-1.0625)), -1.125f);
  EXPECT_EQ(hifloat8_to_float(double_to_hifloat8(18.0)), 20.0f);        // tie of 16 and 20
  EXPECT_EQ(hifloat8_to_float(double_to_hifloat8(0x1p-23)), 0x1p-22f);  // tie of 0 and 2^-22
  EXPECT_EQ(double_to_hifloat8(std::nextafter(0x1p-23, 0.0)), 0x00);
  EXPECT_EQ(double_to_hifloat8(-std::nextafter(0x1p-23, 0.0)), 0x00);  // one zero, unsigned
  EXPECT_EQ(double_to_hifloat8(-0.0), 0x00);
  EXPECT_EQ(hifloat8_to_float(double_to_hifloat8(std::nextafter(40960.0, 0.0))), 32768.0f);
  EXPECT_EQ(double_to_hifloat8(40960.0), 0x6f);
  EXPECT_EQ(double_to_hifloat8(-40960.0), 0xef);
  EXPECT_EQ(double_to_hifloat8(40960.0, Overflow::kSaturate), 0x6e);
  EXPECT_EQ(double_to_hifloat8(-kInf, Overflow::kSaturate), 0xee);
  EXPECT_EQ(double_to_hifloat8(kInf), 0x6f);
  EXPECT_EQ(double_to_hifloat8(-std::numeric_limits<double>::quiet_NaN()), 0x80);
}

TEST(HiFloat8, ToHif8MatchesTheCatalogChecks) {
  EXPECT_EQ(to_hif8(1.07f, false), 1.125f);
  EXPECT_EQ(to_hif8(18.0f, false), 20.0f);
  EXPECT_EQ(to_hif8(320.0f, false), 384.0f);
  EXPECT_EQ(to_hif8(40959.0f, false), 32768.0f);
  EXPECT_EQ(to_hif8(-40959.0f, true), -32768.0f);
  EXPECT_EQ(to_hif8(40960.0f, false), INFINITY);
  EXPECT_EQ(to_hif8(-40960.0f, false), -INFINITY);
  EXPECT_EQ(to_hif8(40960.0f, true), FLT_MAX);
  EXPECT_EQ(to_hif8(-1e30f, true), -FLT_MAX);
  EXPECT_EQ(to_hif8(INFINITY, true), INFINITY);  // infinities pass through
  EXPECT_EQ(to_hif8(-INFINITY, false), -INFINITY);
  EXPECT_TRUE(std::isnan(to_hif8(NAN, true)));
  EXPECT_EQ(to_hif8(0x1p-24f, false), 0.0f);  // E < -23
  EXPECT_EQ(to_hif8(0x1p-23f, false), 0x1p-22f);
  EXPECT_EQ(to_hif8(1e-40f, false), 0.0f);  // float subnormal
}

// to_hif8 lands on the grid the byte encoding holds: encode(to_hif8(x)) decodes to to_hif8(x),
// and below the overflow point it is exactly decode(encode(x)).
TEST(HiFloat8, ToHif8AgreesWithTheByteEncoding) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> exponent(-26, 16);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::ldexp(mantissa(rng), exponent(rng)) * ((i & 1) ? -1.0f : 1.0f);
    const float q = to_hif8(x, false);
    const std::uint8_t bits = double_to_hifloat8(q);
    ASSERT_EQ(hifloat8_to_float(bits), q) << x;
    ASSERT_EQ(hifloat8_to_float(double_to_hifloat8(x)), q) << x;
  }
}

}  // namespace
}  // namespace tileops
