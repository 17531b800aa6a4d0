// Scalar float16 / bfloat16 conversions (bit patterns held in uint16_t). Round-to-nearest-even;
// NaN stays NaN; overflow goes to infinity as IEEE prescribes.
#pragma once

#include <bit>
#include <cstdint>

namespace tileops {

inline float bfloat16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline std::uint16_t float_to_bfloat16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float float16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  // Subnormal or zero: the value is mantissa * 2^-24, exact in float.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return sign != 0 ? -magnitude : magnitude;
}

inline std::uint16_t float_to_float16(float value) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): round abs / 2^-24 to an integer, ties to even. The float
    // addition of 0.5 (exact here) followed by the manual tie fix keeps this exact.
    const float scaled = std::bit_cast<float>(abs) * 0x1p24f;  // exact: power-of-two scale
    auto rounded = static_cast<std::uint32_t>(scaled);
    const float fraction = scaled - static_cast<float>(rounded);
    if (fraction > 0.5f || (fraction == 0.5f && (rounded & 1u) != 0)) ++rounded;
    return static_cast<std::uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  std::uint32_t h = abs - 0x38000000u;  // exponent bias 127 -> 15
  h += 0x0fffu + ((h >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (h >> 13));
}

}  // namespace tileops
