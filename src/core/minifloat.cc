#include "tileops/core/minifloat.h"

#include <cmath>

namespace tileops {

std::uint32_t encode_minifloat(double value, const MinifloatFormat& f) {
  const std::uint32_t sign = std::signbit(value) ? 1u << (f.exponent_bits + f.mantissa_bits) : 0u;
  const std::uint32_t exponent_all_ones = (1u << f.exponent_bits) - 1;
  const std::uint32_t inf = sign | (exponent_all_ones << f.mantissa_bits);
  if (std::isnan(value)) return sign | f.nan;
  const double a = std::fabs(value);
  const double overflow_value = f.saturate ? f.max_finite : (f.has_infinity ? INFINITY : NAN);
  if (std::isinf(a)) {
    if (f.saturate) return encode_minifloat(std::copysign(f.max_finite, value), f);
    return f.has_infinity ? inf : (sign | f.nan);
  }
  if (a == 0.0) return sign;
  const int min_exponent = 1 - f.bias;  // of the smallest normal
  int e = std::ilogb(a);
  if (e < min_exponent) e = min_exponent;  // subnormal: fixed quantum
  const double quantum = std::ldexp(1.0, e - f.mantissa_bits);
  const double units = std::nearbyint(a / quantum);  // exact scaling; ties to even
  const double rounded = units * quantum;
  if (rounded > f.max_finite) return encode_minifloat(std::copysign(overflow_value, value), f);
  if (rounded < std::ldexp(1.0, min_exponent)) {
    return sign | static_cast<std::uint32_t>(units);  // subnormal (or zero)
  }
  const int re = std::ilogb(rounded);  // rounding may have carried into the next binade
  const auto mantissa = static_cast<std::uint32_t>(std::ldexp(rounded, f.mantissa_bits - re)) -
                        (1u << f.mantissa_bits);
  return sign | (static_cast<std::uint32_t>(re + f.bias) << f.mantissa_bits) | mantissa;
}

double decode_minifloat(std::uint32_t bits, const MinifloatFormat& f) {
  const int total = f.exponent_bits + f.mantissa_bits;
  const bool negative = ((bits >> total) & 1u) != 0;
  const std::uint32_t exponent = (bits >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const std::uint32_t mantissa = bits & ((1u << f.mantissa_bits) - 1);
  const std::uint32_t exponent_all_ones = (1u << f.exponent_bits) - 1;
  double magnitude;
  if (f.has_infinity && exponent == exponent_all_ones) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else if (!f.has_infinity && exponent == exponent_all_ones &&
             mantissa == (1u << f.mantissa_bits) - 1) {
    magnitude = NAN;  // e4m3fn: S.1111.111 is the only NaN
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa + (1u << f.mantissa_bits)),
                           static_cast<int>(exponent) - f.bias - f.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace tileops
