// Element conversions of the cast kernel: per dtype, how a stored element reads as a value and
// how a value is stored, written so that the row loops inline to straight code. They are bit
// manipulations on float32 bits and never go through core/scalar.cc, which the tests use as the
// reference. Every conversion rounds once: float64 and wide integers reach the narrow float
// formats through a round-to-odd float32, which keeps the final rounding exact.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tileops/core/data_type.h"
#include "tileops/core/float16.h"
#include "tileops/core/float8.h"

namespace tileops::ops::cpu::cast_element {

// d rounded to float32 with round-to-odd: truncate, then make the last bit 1 when inexact.
// float32 keeps at least two bits more than every narrower target (in their subnormal ranges
// too), so rounding the result to nearest equals rounding d directly.
inline float narrow_to_odd(double d) {
  const float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::isinf(f)) return std::copysign(std::numeric_limits<float>::max(), f);  // odd
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  // f is one of the two floats around d; when it is even, the odd one is a step toward d.
  if ((u & 1u) == 0) u = std::fabs(static_cast<double>(f)) > std::fabs(d) ? u - 1 : u + 1;
  return std::bit_cast<float>(u);
}

// An integer as float32 with round-to-odd (exact below 2^24).
inline float int_to_odd_float(std::int64_t v) {
  if (v >= -(std::int64_t{1} << 24) && v <= (std::int64_t{1} << 24)) return static_cast<float>(v);
  const std::uint64_t magnitude =
      v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  // Round-to-odd to 53 bits first (exact in double), then to 24 bits.
  const int shift = std::max(0, static_cast<int>(std::bit_width(magnitude)) - 53);
  std::uint64_t kept = magnitude >> shift;
  if ((magnitude & ((std::uint64_t{1} << shift) - 1)) != 0) kept |= 1;
  const double scale = std::bit_cast<double>(static_cast<std::uint64_t>(1023 + shift) << 52);
  const double d = static_cast<double>(kept) * scale;  // exact: kept < 2^53
  return narrow_to_odd(v < 0 ? -d : d);
}

// |f| (float32 bits `abs`, below the target's smallest normal) in units of the target's
// subnormal step 2^step_exponent, rounded to nearest even in integer arithmetic.
inline std::uint32_t subnormal_units(std::uint32_t abs, int step_exponent) {
  const int shift = 23 - (static_cast<int>(abs >> 23) - 127 - step_exponent);  // >= 1 here
  if (shift > 25) return 0;  // below half a step (float32 subnormals and zeros included)
  const std::uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
  const std::uint32_t half = 1u << (shift - 1);
  return (significand + half - 1 + ((significand >> shift) & 1u)) >> shift;
}

// float8_e4m3fn, saturating: finite overflow and Inf give ±448; NaN keeps its sign.
inline std::uint8_t float_to_e4m3fn(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7f;
  if (abs >= 0x43e00000u) return sign | 0x7e;  // >= 448
  if (abs < 0x3c800000u) {                     // below 2^-6: subnormals, steps of 2^-9
    return static_cast<std::uint8_t>(sign | subnormal_units(abs, -9));
  }
  std::uint32_t b = abs - (120u << 23);  // exponent bias 127 -> 7
  b += 0x7ffffu + ((b >> 20) & 1u);      // round the 20 dropped bits to nearest even
  return static_cast<std::uint8_t>(sign | (b >> 20));
}

// float8_e5m2: overflow to ±Inf (from 61440, the tie above 57344 that rounds to even).
inline std::uint8_t float_to_e5m2(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e;
  if (abs >= 0x47700000u) return sign | 0x7c;  // >= 61440
  if (abs < 0x38800000u) {                     // below 2^-14: subnormals, steps of 2^-16
    return static_cast<std::uint8_t>(sign | subnormal_units(abs, -16));
  }
  std::uint32_t b = abs - (112u << 23);  // exponent bias 127 -> 15
  b += 0xfffffu + ((b >> 21) & 1u);
  return static_cast<std::uint8_t>(sign | (b >> 21));
}

// HiF8 (docs/dtypes.md): mantissa bits per |exponent|, and the dot + exponent fields per
// exponent in [-15, 15] already in place in the byte.
inline constexpr int hif8_mantissa_bits(int abs_exponent) {
  return abs_exponent <= 3 ? 3 : abs_exponent <= 7 ? 2 : abs_exponent <= 15 ? 1 : 0;
}

inline constexpr std::uint8_t hif8_exponent_field(int e) {
  const int a = e < 0 ? -e : e;
  const int m = hif8_mantissa_bits(a);
  if (a == 0) return 0b0001 << 3;  // dot 0001: E = 0
  if (a == 1) return static_cast<std::uint8_t>((0b001 << 4) | ((e < 0 ? 1 : 0) << 3));
  // dot 01 / 10 / 11 for 2 / 3 / 4 exponent bits: sign bit, then |E| without its leading 1.
  const int d = a <= 3 ? 2 : a <= 7 ? 3 : 4;
  const int dot = d - 1;
  const int low = a - (1 << (d - 1));
  return static_cast<std::uint8_t>((dot << 5) | ((e < 0 ? 1 : 0) << (d - 1 + m)) | (low << m));
}

inline constexpr auto kHif8ExponentFields = [] {
  struct Table {
    std::uint8_t field[31];
  } t{};
  for (int e = -15; e <= 15; ++e) t.field[e + 15] = hif8_exponent_field(e);
  return t;
}();

// HiF8, ties away from zero; from 40960 (the tie above 32768) ±Inf; below 2^-23 zero (HiF8
// has one zero); NaN is 0x80.
inline std::uint8_t float_to_hif8(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x80;
  if (abs >= 0x47200000u) return sign | 0x6f;       // >= 40960
  if (abs < 0x34000000u) return 0x00;               // < 2^-23
  const int e = static_cast<int>(abs >> 23) - 127;  // -23 .. 15
  const int dropped = 23 - hif8_mantissa_bits(e < 0 ? -e : e);
  const std::uint32_t half = 1u << (dropped - 1);
  const std::uint32_t b = (abs + half) & ~((half << 1) - 1);          // ties away; may carry up
  const int re = std::max(static_cast<int>(b >> 23) - 127, -22);      // [2^-23, 2^-22) -> 2^-22
  if (re <= -16) return static_cast<std::uint8_t>(sign | (re + 23));  // denormal: 2^(m-23)
  const int m = hif8_mantissa_bits(re < 0 ? -re : re);
  const auto mantissa = static_cast<std::uint8_t>((b >> (23 - m)) & ((1u << m) - 1));
  return static_cast<std::uint8_t>(sign | kHif8ExponentFields.field[re + 15] | mantissa);
}

// Truncation toward zero, saturating at I's range, NaN -> 0.
template <typename I>
I float_to_int(double v) {
  if (std::isnan(v)) return 0;
  // 2^digits: the first value above max(), exact in double (max() of int64 is not).
  constexpr double kAboveMax =
      static_cast<double>(std::uint64_t{1} << (std::numeric_limits<I>::digits - 1)) * 2.0;
  if (v >= kAboveMax) return std::numeric_limits<I>::max();
  if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) {
    return std::numeric_limits<I>::lowest();
  }
  return static_cast<I>(v);
}

template <typename I>
I clamp_int(std::int64_t v) {
  if (v < static_cast<std::int64_t>(std::numeric_limits<I>::lowest())) {
    return std::numeric_limits<I>::lowest();
  }
  if (v > static_cast<std::int64_t>(std::numeric_limits<I>::max())) {
    return std::numeric_limits<I>::max();
  }
  return static_cast<I>(v);
}

// Elem<dtype>: Storage, value(stored) -> int64/float/double, from(value) -> stored.
template <DataType>
struct Elem;

template <>
struct Elem<DataType::kBool> {
  using Storage = std::uint8_t;
  static std::int64_t value(Storage s) { return s != 0 ? 1 : 0; }
  static Storage from(std::int64_t v) { return v != 0 ? 1 : 0; }
  static Storage from(float v) { return v != 0.0f ? 1 : 0; }  // NaN is nonzero: true
  static Storage from(double v) { return v != 0.0 ? 1 : 0; }
};

template <typename I>
struct IntElem {
  using Storage = I;
  static std::int64_t value(Storage s) { return s; }
  static Storage from(std::int64_t v) { return clamp_int<I>(v); }
  static Storage from(float v) { return float_to_int<I>(v); }
  static Storage from(double v) { return float_to_int<I>(v); }
};
template <>
struct Elem<DataType::kInt8> : IntElem<std::int8_t> {};
template <>
struct Elem<DataType::kInt16> : IntElem<std::int16_t> {};
template <>
struct Elem<DataType::kInt32> : IntElem<std::int32_t> {};
template <>
struct Elem<DataType::kInt64> : IntElem<std::int64_t> {};
template <>
struct Elem<DataType::kUInt8> : IntElem<std::uint8_t> {};

template <>
struct Elem<DataType::kFloat32> {
  using Storage = float;
  static float value(Storage s) { return s; }
  static Storage from(std::int64_t v) { return static_cast<float>(v); }  // one rounding
  static Storage from(float v) { return v; }
  static Storage from(double v) { return static_cast<float>(v); }  // IEEE: overflow -> Inf
};

template <>
struct Elem<DataType::kFloat64> {
  using Storage = double;
  static double value(Storage s) { return s; }
  static Storage from(std::int64_t v) { return static_cast<double>(v); }
  static Storage from(float v) { return v; }
  static Storage from(double v) { return v; }
};

// The narrow float formats: decoded exactly to float; encoded from float by one rounding.
template <typename S, float (*Decode)(S), S (*Encode)(float)>
struct NarrowFloatElem {
  using Storage = S;
  static float value(Storage s) { return Decode(s); }
  static Storage from(std::int64_t v) { return Encode(int_to_odd_float(v)); }
  static Storage from(float v) { return Encode(v); }
  static Storage from(double v) { return Encode(narrow_to_odd(v)); }
};
template <>
struct Elem<DataType::kFloat16>
    : NarrowFloatElem<std::uint16_t, float16_to_float, float_to_float16> {};
template <>
struct Elem<DataType::kBFloat16>
    : NarrowFloatElem<std::uint16_t, bfloat16_to_float, float_to_bfloat16> {};
template <>
struct Elem<DataType::kFloat8E4M3FN>
    : NarrowFloatElem<std::uint8_t, float8_e4m3fn_to_float, float_to_e4m3fn> {};
template <>
struct Elem<DataType::kFloat8E5M2>
    : NarrowFloatElem<std::uint8_t, float8_e5m2_to_float, float_to_e5m2> {};
template <>
struct Elem<DataType::kHiFloat8> : NarrowFloatElem<std::uint8_t, hifloat8_to_float, float_to_hif8> {
};

}  // namespace tileops::ops::cpu::cast_element
