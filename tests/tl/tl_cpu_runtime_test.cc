// The tile runtime (src/tl/cpu/tl_runtime.h) compiled on its own, as ordinary C++: the embedded
// text is the header, and its conversions and arithmetic agree with independent references
// (tileops' core conversions, libm in double, integer division written out).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "src/tl/cpu/runtime_source.h"
#include "tileops/core/float16.h"
#include "tileops/core/float8.h"

#define TL_STREAM_BYTES 0ll
#include "src/tl/cpu/tl_runtime.h"

namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Distance in units in the last place between two finite floats of one sign.
std::int64_t ulps(float a, float b) {
  const auto ordered = [](float f) {
    const std::int64_t u = bits(f) & 0x7FFFFFFF;
    return std::signbit(f) ? -u : u;
  };
  return std::llabs(ordered(a) - ordered(b));
}

TEST(TlRuntime, EmbeddedTextIsTheHeader) {
  std::ifstream in(TILEOPS_TL_RUNTIME_PATH);
  ASSERT_TRUE(in) << TILEOPS_TL_RUNTIME_PATH;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), tileops::tl::cpu::runtime_source());
}

TEST(TlRuntime, HalfConversionsMatchTheCoreOnes) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float got = tl_h2f(static_cast<u16>(h));
    const float want = tileops::float16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(bits(got), bits(want)) << h;
    }
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    float f;
    const std::uint32_t u = any(rng);
    std::memcpy(&f, &u, 4);
    const std::uint16_t want = tileops::float_to_float16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(tl_h2f(tl_f2h(f)))) << u;
    } else {
      EXPECT_EQ(tl_f2h(f), want) << f;
    }
  }
  EXPECT_EQ(tl_f2h(65520.0f), 0x7C00);  // rounds up to inf
  EXPECT_EQ(tl_f2h(65504.0f), 0x7BFF);
  EXPECT_EQ(tl_f2h(1.0f + 0x1.0p-11f), 0x3C00);  // a tie rounds to even
}

TEST(TlRuntime, BFloat16ConversionsMatchTheCoreOnes) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    float f;
    const std::uint32_t u = any(rng);
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(tl_bf2f(tl_f2bf(f)))) << u;  // stays NaN, quieted
    } else {
      EXPECT_EQ(tl_f2bf(f), tileops::float_to_bfloat16(f)) << f;
      EXPECT_EQ(bits(tl_bf2f(tl_f2bf(f))), bits(tileops::bfloat16_to_float(tl_f2bf(f))));
    }
  }
}

// The inline float8 encoders against the core ones (core/minifloat.cc, the interpreter's): random
// floats of every magnitude, every code's value, the midpoints between neighbouring codes (ties)
// and one float either side of each, zeros, infinities, NaN, subnormal float32 inputs.
TEST(TlRuntime, Float8EncodersMatchTheCoreOnes) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               -std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::max(),
                               61439.0f,
                               61440.0f,
                               464.0f,
                               465.0f,
                               480.0f,
                               1e30f};
  for (int c = 0; c < 255; ++c) {  // each code's value and the midpoint up to the next code
    for (const bool e5m2 : {true, false}) {
      const auto code = static_cast<std::uint8_t>(c);
      const float lo =
          e5m2 ? tileops::float8_e5m2_to_float(code) : tileops::float8_e4m3fn_to_float(code);
      const float hi = e5m2 ? tileops::float8_e5m2_to_float(static_cast<std::uint8_t>(c + 1))
                            : tileops::float8_e4m3fn_to_float(static_cast<std::uint8_t>(c + 1));
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
      for (float v : {lo, mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)}) {
        values.push_back(v);
        values.push_back(-v);
      }
    }
  }
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    // Exponents near the formats' ranges half of the time (bits 2^-20 .. 2^20), else any float.
    std::uint32_t u = any(rng);
    if (i % 2 == 0) u = (u & 0x807FFFFFu) | ((107u + (u >> 23) % 41u) << 23);
    float f;
    std::memcpy(&f, &u, 4);
    values.push_back(f);
  }
  for (const float v : values) {
    const std::uint8_t want5 = tileops::double_to_float8_e5m2(v);
    const std::uint8_t want4 = tileops::double_to_float8_e4m3fn(v);
    ASSERT_EQ(tl_f2e5m2(v), want5) << v << " bits " << bits(v);
    ASSERT_EQ(tl_f2e4m3(v), want4) << v << " bits " << bits(v);
  }
}

TEST(TlRuntime, ExpIsWithinTwoUlpsOfLibm) {
  for (float x = -103.0f; x < 88.7f; x += 0.0137f) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    if (want < std::numeric_limits<float>::min()) continue;  // subnormal results: checked below
    EXPECT_LE(ulps(tl_expf(x), want), 2) << x;
  }
  EXPECT_EQ(tl_expf(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(tl_expf(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(tl_expf(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(tl_expf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_GT(tl_expf(-100.0f), 0.0f);  // gradual underflow, not a flush to zero
  EXPECT_NEAR(tl_expf(-100.0f), std::exp(-100.0), 1e-45);
}

TEST(TlRuntime, IntegerDivisionFollowsPython) {
  for (i64 a = -9; a <= 9; ++a) {
    for (i64 b = -4; b <= 4; ++b) {
      if (b == 0) {
        EXPECT_EQ(tl_floordiv(a, b), 0);
        continue;
      }
      const double q = std::floor(static_cast<double>(a) / static_cast<double>(b));
      EXPECT_EQ(tl_floordiv(a, b), static_cast<i64>(q)) << a << " // " << b;
      EXPECT_EQ(tl_mod(a, b), a - static_cast<i64>(q) * b) << a << " % " << b;
    }
  }
  constexpr i64 kMin = std::numeric_limits<i64>::min();
  EXPECT_EQ(tl_floordiv(kMin, -1), kMin);  // wraps as two's complement, no trap
  EXPECT_EQ(tl_mod(kMin, -1), 0);
  EXPECT_EQ(tl_shl(1, 64, 64), 0);  // shifts past the width give 0 (or the sign)
  EXPECT_EQ(tl_shr(-8, 70, 64), -1);
  EXPECT_EQ(tl_shr(8, 2, 64), 2);
}

TEST(TlRuntime, MinMaxPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(tl_fmaxf(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(tl_fminf(1.0f, nan)));
  EXPECT_EQ(tl_fmaxf(-1.0f, 2.0f), 2.0f);
  EXPECT_EQ(tl_fminf(-1.0f, 2.0f), -1.0f);
  EXPECT_EQ(tl_reluf(-3.0f), 0.0f);
  EXPECT_TRUE(std::isnan(tl_reluf(nan)));
}

}  // namespace
