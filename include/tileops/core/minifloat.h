// Generic IEEE-style binary formats narrower than float64 (float16, bfloat16, the fp8s):
// exact decode, and encode from double with one rounding (round-to-nearest-even), so no
// double-rounding error through float32.
#pragma once

#include <cstdint>

namespace tileops {

struct MinifloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;  // IEEE: all-ones exponent is Inf/NaN
  double max_finite;  // largest finite magnitude
  std::uint32_t nan;  // canonical positive NaN pattern
  bool saturate;      // overflow -> ±max_finite (else ±Inf, or NaN without Inf)
};

inline constexpr MinifloatFormat kFloat16Format{5, 10, 15, true, 65504.0, 0x7e00, false};
inline constexpr MinifloatFormat kBFloat16Format{8, 7, 127, true, 0x1.fep127, 0x7fc0, false};
inline constexpr MinifloatFormat kFloat8E4M3FNFormat{4, 3, 7, false, 448.0, 0x7f, true};
inline constexpr MinifloatFormat kFloat8E5M2Format{5, 2, 15, true, 57344.0, 0x7e, false};

std::uint32_t encode_minifloat(double value, const MinifloatFormat& format);
double decode_minifloat(std::uint32_t bits, const MinifloatFormat& format);

}  // namespace tileops
