// The scalar number formats: every bit pattern of float16/bfloat16 (2^16) and of the 8-bit
// floats (2^8) decodes and re-encodes to itself; every encoder picks the nearest representable
// value (ties to even, HiF8 ties away) with its documented overflow, checked against a reference
// built here from the sorted list of decoded values; HiF8 against an independent decoder and
// published test vectors; to_hif8; and the integer side of scalar.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tileops/core/float16.h"
#include "tileops/core/float8.h"
#include "tileops/core/minifloat.h"
#include "tileops/core/scalar.h"

namespace tileops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Independent decoder of IEEE-style binary formats: sign, exponent (bias 2^(e-1) - 1), mantissa.
// e4m3fn ("fn"): no infinities, only S.1111.111 is NaN.
double ieee_value(std::uint32_t bits, int exponent_bits, int mantissa_bits, bool fn) {
  const bool negative = (bits >> (exponent_bits + mantissa_bits)) & 1u;
  const std::uint32_t e = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1);
  const std::uint32_t m = bits & ((1u << mantissa_bits) - 1);
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const std::uint32_t top = (1u << exponent_bits) - 1;
  double v;
  if (!fn && e == top) {
    v = m == 0 ? kInf : kNaN;
  } else if (fn && e == top && m == (1u << mantissa_bits) - 1) {
    v = kNaN;
  } else if (e == 0) {
    v = std::ldexp(m, 1 - bias - mantissa_bits);
  } else {
    v = std::ldexp(m + (1u << mantissa_bits), static_cast<int>(e) - bias - mantissa_bits);
  }
  return negative ? -v : v;
}

// Independent HiF8 decoder written from the paper's definition (docs/dtypes.md): the dot field
// is read as a prefix code, the exponent as sign-magnitude with an implicit leading 1.
double hif8_value(std::uint32_t bits) {
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  const std::uint32_t r = bits & 0x7f;
  if (bits == 0x80) return kNaN;
  if (r == 0x6f) return sign * kInf;
  int width;  // stored exponent bits
  int dot_bits;
  if ((r >> 5) == 3) {
    width = 4, dot_bits = 2;
  } else if ((r >> 5) == 2) {
    width = 3, dot_bits = 2;
  } else if ((r >> 5) == 1) {
    width = 2, dot_bits = 2;
  } else if ((r >> 4) == 1) {
    width = 1, dot_bits = 3;
  } else if ((r >> 3) == 1) {
    width = 0, dot_bits = 4;
  } else {
    return r == 0 ? 0.0 : sign * std::ldexp(1.0, static_cast<int>(r & 7) - 23);  // denormal
  }
  const int mantissa_bits = 7 - dot_bits - width;
  const std::uint32_t field = (r >> mantissa_bits) & ((1u << width) - 1);
  int exponent = 0;
  if (width > 0) {
    const int magnitude =
        static_cast<int>((1u << (width - 1)) | (field & ((1u << (width - 1)) - 1)));
    exponent = (field >> (width - 1)) ? -magnitude : magnitude;
  }
  const double mantissa = 1.0 + std::ldexp(r & ((1u << mantissa_bits) - 1), -mantissa_bits);
  return sign * std::ldexp(mantissa, exponent);
}

// A format as the reference sees it: its decoder, the values' order and the overflow point.
struct Format {
  std::string name;
  int bits;
  std::function<double(std::uint32_t)> decode;
  double above_max;        // the value one step above the largest finite one (rounds to overflow)
  bool ties_away = false;  // HiF8; the others round ties to even
  bool signed_zero = true;
};

const Format kF16{"float16", 16, [](std::uint32_t b) { return ieee_value(b, 5, 10, false); },
                  65536.0};
const Format kBF16{"bfloat16", 16, [](std::uint32_t b) { return ieee_value(b, 8, 7, false); },
                   0x1p128};
const Format kE4M3{"float8_e4m3fn", 8, [](std::uint32_t b) { return ieee_value(b, 4, 3, true); },
                   480.0};
const Format kE5M2{"float8_e5m2", 8, [](std::uint32_t b) { return ieee_value(b, 5, 2, false); },
                   65536.0};
const Format kHiF8{"hifloat8", 8, hif8_value, 49152.0, true, false};

// Nonnegative finite values in increasing order, with the pattern of each (for ties to even).
struct Grid {
  std::vector<double> values;
  std::vector<std::uint32_t> patterns;
};

Grid grid_of(const Format& f) {
  std::map<double, std::uint32_t> sorted;
  for (std::uint32_t b = 0; b < (1u << f.bits); ++b) {
    const double v = f.decode(b);
    if (std::isfinite(v) && !std::signbit(v)) sorted.emplace(v, b);
  }
  Grid g;
  for (const auto& [v, b] : sorted) {
    g.values.push_back(v);
    g.patterns.push_back(b);
  }
  return g;
}

enum class Outcome { kValue, kOverflow, kNaN };
struct Expected {
  Outcome outcome;
  double value = 0.0;  // signed; for kValue
};

// Round to nearest: ties to the even pattern (IEEE patterns alternate parity, the step above
// max counting as max's pattern + 1), or away from zero for HiF8.
Expected nearest(const Format& f, const Grid& g, double x) {
  if (std::isnan(x)) return {Outcome::kNaN};
  const double a = std::fabs(x);
  if (a >= f.above_max) return {Outcome::kOverflow};
  const auto it = std::upper_bound(g.values.begin(), g.values.end(), a);
  const std::size_t i = static_cast<std::size_t>(it - g.values.begin()) - 1;
  const double lo = g.values[i];
  const bool last = i + 1 == g.values.size();
  const double hi = last ? f.above_max : g.values[i + 1];
  const double mid = lo + (hi - lo) / 2;  // exact in double for all these formats
  bool up = a > mid;
  if (a == mid) up = f.ties_away || (g.patterns[i] & 1u) != 0;
  if (a == lo) up = false;
  if (up && last) return {Outcome::kOverflow};
  return {Outcome::kValue, std::copysign(up ? hi : lo, x)};
}

// Inputs: every value, every midpoint and its double and float neighbours, values beyond the
// range, zeros, infinities, NaN, subnormal doubles/floats and random doubles over the range.
std::vector<double> inputs_for(const Format& f, const Grid& g, std::mt19937_64& rng) {
  std::vector<double> xs = {0.0,
                            -0.0,
                            kInf,
                            -kInf,
                            kNaN,
                            -kNaN,
                            1e-300,
                            5e-324,
                            0x1p-149,
                            1e-40,
                            std::numeric_limits<double>::max(),
                            std::numeric_limits<float>::max(),
                            f.above_max * 2,
                            1e30};
  std::vector<double> points = g.values;
  points.push_back(f.above_max);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double v = points[i];
    for (double p : {v, i + 1 < points.size() ? v + (points[i + 1] - v) / 2 : v * 1.5}) {
      const auto pf = static_cast<float>(p);
      for (double q : {p, std::nextafter(p, 0.0), std::nextafter(p, kInf),
                       static_cast<double>(std::nextafter(pf, 0.0f)),
                       static_cast<double>(std::nextafter(pf, INFINITY))}) {
        xs.push_back(q);
        xs.push_back(-q);
      }
    }
  }
  const int lo_exp = std::ilogb(g.values[1]) - 3;
  const int hi_exp = std::ilogb(f.above_max) + 2;
  std::uniform_int_distribution<int> exponent(lo_exp, hi_exp);
  std::uniform_int_distribution<std::uint64_t> bits;
  for (int i = 0; i < 100000; ++i) {
    const double m = 1.0 + std::ldexp(static_cast<double>(bits(rng) >> 12), -52);
    xs.push_back(std::ldexp((bits(rng) & 1) ? -m : m, exponent(rng)));
  }
  return xs;
}

enum class OnOverflow { kInfinity, kMax, kNaN };

// Checks `encode` against the reference on the inputs; `float_input` encoders only see inputs
// exactly representable as float.
void expect_nearest(const Format& f, const std::string& what,
                    const std::function<std::uint32_t(double)>& encode, OnOverflow overflow,
                    bool float_input = false) {
  SCOPED_TRACE(f.name + " " + what);
  const Grid g = grid_of(f);
  std::mt19937_64 rng(2024);
  const double max = g.values.back();
  int failures = 0;
  for (double x : inputs_for(f, g, rng)) {
    if (float_input && !std::isnan(x) && static_cast<double>(static_cast<float>(x)) != x) continue;
    const std::uint32_t p = encode(x);
    const double r = f.decode(p);
    const Expected e = nearest(f, g, x);
    bool ok = false;
    if (e.outcome == Outcome::kNaN) {
      ok = std::isnan(r);
    } else if (e.outcome == Outcome::kOverflow) {
      ok = overflow == OnOverflow::kNaN
               ? std::isnan(r)
               : r == std::copysign(overflow == OnOverflow::kMax ? max : kInf, x);
    } else {
      ok = r == e.value;
      if (ok && e.value == 0.0) ok = f.signed_zero ? std::signbit(r) == std::signbit(x) : p == 0;
    }
    if (!ok && ++failures <= 5) {
      std::ostringstream message;
      message << std::setprecision(17) << "input " << x << " (" << std::hexfloat << x
              << std::defaultfloat << "): got pattern 0x" << std::hex << p << std::dec << " = " << r
              << ", expected ";
      if (e.outcome == Outcome::kValue) {
        message << e.value;
      } else {
        message << (e.outcome == Outcome::kNaN ? "NaN" : "overflow");
      }
      ADD_FAILURE() << message.str();
    }
  }
  EXPECT_EQ(failures, 0);
}

std::uint32_t write_bits(double x, DataType dtype) {
  std::uint64_t bits = 0;  // little-endian: the low bytes hold the element
  write_from_double(x, &bits, dtype);
  return static_cast<std::uint32_t>(bits);
}

TEST(FloatFormats, Float16EncodersRoundToNearestEven) {
  expect_nearest(
      kF16, "float_to_float16", [](double x) { return float_to_float16(static_cast<float>(x)); },
      OnOverflow::kInfinity, true);
  expect_nearest(
      kF16, "encode_minifloat", [](double x) { return encode_minifloat(x, kFloat16Format); },
      OnOverflow::kInfinity);
  expect_nearest(
      kF16, "write_from_double", [](double x) { return write_bits(x, DataType::kFloat16); },
      OnOverflow::kInfinity);
}

TEST(FloatFormats, BFloat16EncodersRoundToNearestEven) {
  expect_nearest(
      kBF16, "float_to_bfloat16", [](double x) { return float_to_bfloat16(static_cast<float>(x)); },
      OnOverflow::kInfinity, true);
  expect_nearest(
      kBF16, "encode_minifloat", [](double x) { return encode_minifloat(x, kBFloat16Format); },
      OnOverflow::kInfinity);
  expect_nearest(
      kBF16, "write_from_double", [](double x) { return write_bits(x, DataType::kBFloat16); },
      OnOverflow::kInfinity);
}

TEST(FloatFormats, Float8EncodersRoundToNearestEven) {
  expect_nearest(
      kE4M3, "default (saturating)", [](double x) { return double_to_float8_e4m3fn(x); },
      OnOverflow::kMax);
  expect_nearest(
      kE4M3, "Overflow::kInfinity",
      [](double x) { return double_to_float8_e4m3fn(x, Overflow::kInfinity); }, OnOverflow::kNaN);
  expect_nearest(
      kE4M3, "write_from_double", [](double x) { return write_bits(x, DataType::kFloat8E4M3FN); },
      OnOverflow::kMax);
  expect_nearest(
      kE5M2, "default", [](double x) { return double_to_float8_e5m2(x); }, OnOverflow::kInfinity);
  expect_nearest(
      kE5M2, "Overflow::kSaturate",
      [](double x) { return double_to_float8_e5m2(x, Overflow::kSaturate); }, OnOverflow::kMax);
  expect_nearest(
      kE5M2, "write_from_double", [](double x) { return write_bits(x, DataType::kFloat8E5M2); },
      OnOverflow::kInfinity);
}

TEST(FloatFormats, HiFloat8EncodersRoundToNearestTiesAway) {
  expect_nearest(
      kHiF8, "default", [](double x) { return double_to_hifloat8(x); }, OnOverflow::kInfinity);
  expect_nearest(
      kHiF8, "Overflow::kSaturate",
      [](double x) { return double_to_hifloat8(x, Overflow::kSaturate); }, OnOverflow::kMax);
  expect_nearest(
      kHiF8, "write_from_double", [](double x) { return write_bits(x, DataType::kHiFloat8); },
      OnOverflow::kInfinity);
}

// Every pattern: the library decoders agree with the independent one and with each other, and
// every encoder maps the decoded value back to the same pattern (NaNs to a NaN).
struct Codec {
  std::string name;
  std::function<double(std::uint32_t)> decode;
  std::function<std::uint32_t(double)> encode;  // null: decoder only
};

void expect_round_trips(const Format& f, const std::vector<Codec>& codecs, int nans, int infs) {
  int nan_count = 0;
  int inf_count = 0;
  for (std::uint32_t p = 0; p < (1u << f.bits); ++p) {
    const double v = f.decode(p);
    nan_count += std::isnan(v);
    inf_count += std::isinf(v);
    for (const Codec& c : codecs) {
      SCOPED_TRACE(f.name + " " + c.name + " pattern " + std::to_string(p));
      if (c.decode) {
        const double d = c.decode(p);
        if (std::isnan(v)) {
          ASSERT_TRUE(std::isnan(d));
        } else {
          ASSERT_EQ(d, v);
          ASSERT_EQ(std::signbit(d), std::signbit(v));
        }
      }
      if (c.encode) {
        const std::uint32_t q = c.encode(v);
        if (std::isnan(v)) {
          ASSERT_TRUE(std::isnan(f.decode(q)));
        } else {
          ASSERT_EQ(q, p);
        }
      }
    }
  }
  EXPECT_EQ(nan_count, nans) << f.name;
  EXPECT_EQ(inf_count, infs) << f.name;
}

template <typename T>
double read(std::uint32_t p, DataType dtype) {
  const auto stored = static_cast<T>(p);
  return read_as_double(&stored, dtype);
}

TEST(FloatFormats, EverySixteenBitPatternRoundTrips) {
  expect_round_trips(
      kF16,
      {{"float16.h", [](std::uint32_t p) { return float16_to_float(p); },
        [](double v) { return float_to_float16(static_cast<float>(v)); }},
       {"minifloat", [](std::uint32_t p) { return decode_minifloat(p, kFloat16Format); },
        [](double v) { return encode_minifloat(v, kFloat16Format); }},
       {"scalar.h", [](std::uint32_t p) { return read<std::uint16_t>(p, DataType::kFloat16); },
        [](double v) { return write_bits(v, DataType::kFloat16); }}},
      2046, 2);
  expect_round_trips(
      kBF16,
      {{"float16.h", [](std::uint32_t p) { return bfloat16_to_float(p); },
        [](double v) { return float_to_bfloat16(static_cast<float>(v)); }},
       {"minifloat", [](std::uint32_t p) { return decode_minifloat(p, kBFloat16Format); },
        [](double v) { return encode_minifloat(v, kBFloat16Format); }},
       {"scalar.h", [](std::uint32_t p) { return read<std::uint16_t>(p, DataType::kBFloat16); },
        [](double v) { return write_bits(v, DataType::kBFloat16); }}},
      254, 2);
}

TEST(FloatFormats, EveryEightBitPatternRoundTrips) {
  expect_round_trips(
      kE4M3,
      {{"float8.h", [](std::uint32_t p) { return float8_e4m3fn_to_float(p); },
        [](double v) { return double_to_float8_e4m3fn(v); }},
       {"float8.h kInfinity", nullptr,
        [](double v) { return double_to_float8_e4m3fn(v, Overflow::kInfinity); }},
       {"scalar.h", [](std::uint32_t p) { return read<std::uint8_t>(p, DataType::kFloat8E4M3FN); },
        [](double v) { return write_bits(v, DataType::kFloat8E4M3FN); }}},
      2, 0);
  expect_round_trips(
      kE5M2,
      {{"float8.h", [](std::uint32_t p) { return float8_e5m2_to_float(p); },
        [](double v) { return double_to_float8_e5m2(v); }},
       {"scalar.h", [](std::uint32_t p) { return read<std::uint8_t>(p, DataType::kFloat8E5M2); },
        [](double v) { return write_bits(v, DataType::kFloat8E5M2); }}},
      6, 2);
  expect_round_trips(
      kHiF8,
      {{"float8.h", [](std::uint32_t p) { return hifloat8_to_float(p); },
        [](double v) { return double_to_hifloat8(v); }},
       {"scalar.h", [](std::uint32_t p) { return read<std::uint8_t>(p, DataType::kHiFloat8); },
        [](double v) { return write_bits(v, DataType::kHiFloat8); }}},
      1, 2);
  // Saturating encoders keep every finite pattern too.
  for (std::uint32_t p = 0; p < 256; ++p) {
    const double v = hif8_value(p);
    if (std::isfinite(v)) {
      EXPECT_EQ(double_to_hifloat8(v, Overflow::kSaturate), p);
    }
    const double w = ieee_value(p, 5, 2, false);
    if (std::isfinite(w)) {
      EXPECT_EQ(double_to_float8_e5m2(w, Overflow::kSaturate), p);
    }
  }
}

}  // namespace
}  // namespace tileops
