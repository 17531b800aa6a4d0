// HiF8 (HiFloat8, arXiv 2409.16626). Byte layout, most significant bit first:
//   sign | dot (prefix code) | exponent (D bits) | mantissa
//   dot "11" -> D=4, 1 mantissa bit;  "10" -> D=3, 2 bits;  "01" -> D=2, 3 bits;
//   "001" -> D=1, 3 bits;  "0001" -> D=0 (E=0), 3 bits;  "0000" -> denormal, 3 bits m:
//   value 2^(m-23) for m >= 1, zero (sign 0) or NaN (sign 1) for m = 0.
// The D-bit exponent is sign-magnitude (first bit 1 = negative) with an implicit leading
// magnitude bit: |E| = 2^(D-1) + (remaining D-1 bits). S.11.0111.1 (E=+15, mantissa 1) is ±Inf.
// Rounding is to nearest, ties away from zero (the format's own rounding, as in `to_hif8`).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "tileops/core/float8.h"

namespace tileops {
namespace {

constexpr std::uint8_t kNaN = 0x80;
constexpr std::uint8_t kInf = 0x6f;
constexpr double kMaxFinite = 32768.0;
constexpr double kOverflowThreshold = 40960.0;

int mantissa_bits_for(int abs_exponent) {
  if (abs_exponent <= 3) return 3;
  if (abs_exponent <= 7) return 2;
  if (abs_exponent <= 15) return 1;
  return 0;
}

// Rounds |x| (finite, below the overflow threshold) onto the HiF8 grid, ties away from zero.
double round_magnitude(double a) {
  if (a == 0.0) return 0.0;
  const int e = std::ilogb(a);
  if (e < -23) return 0.0;
  const double step = std::ldexp(1.0, std::max(e, -22) - mantissa_bits_for(std::abs(e)));
  return std::floor(a / step + 0.5) * step;
}

// Bits of a magnitude that is exactly on the grid (nonzero, finite, <= 32768).
std::uint8_t encode_grid_magnitude(double a) {
  const int e = std::ilogb(a);
  if (e < -15) return static_cast<std::uint8_t>(e + 23);  // denormal: dot 0000, m = e + 23
  const int abs_e = std::abs(e);
  const int mbits = mantissa_bits_for(abs_e);
  const auto mantissa =
      static_cast<unsigned>(std::ldexp(a, mbits - e)) - (1u << mbits);  // drop the leading 1
  int d = 0;
  while (d < 4 && abs_e >= (1 << d)) ++d;  // D = bit length of |E|
  unsigned dot = 0;
  int dot_bits = 0;
  switch (d) {
    case 0:
      dot = 0b0001;
      dot_bits = 4;
      break;
    case 1:
      dot = 0b001;
      dot_bits = 3;
      break;
    case 2:
      dot = 0b01;
      dot_bits = 2;
      break;
    case 3:
      dot = 0b10;
      dot_bits = 2;
      break;
    default:
      dot = 0b11;
      dot_bits = 2;
      break;
  }
  unsigned exponent = 0;
  if (d > 0) {
    const unsigned magnitude_low = static_cast<unsigned>(abs_e) - (1u << (d - 1));
    exponent = ((e < 0 ? 1u : 0u) << (d - 1)) | magnitude_low;
  }
  const unsigned bits = (dot << (7 - dot_bits)) | (exponent << mbits) | mantissa;
  return static_cast<std::uint8_t>(bits);
}

}  // namespace

float hifloat8_to_float(std::uint8_t bits) {
  const bool negative = (bits & 0x80) != 0;
  const unsigned r = bits & 0x7f;
  double magnitude;
  if (r == kInf) {
    magnitude = std::numeric_limits<double>::infinity();
  } else if ((r >> 3) == 0) {  // dot 0000: denormal mode
    const unsigned m = r & 0x7;
    if (m == 0) return negative ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    magnitude = std::ldexp(1.0, static_cast<int>(m) - 23);
  } else {
    int d;
    int mbits;
    if ((r >> 5) == 0b11) {
      d = 4, mbits = 1;
    } else if ((r >> 5) == 0b10) {
      d = 3, mbits = 2;
    } else if ((r >> 5) == 0b01) {
      d = 2, mbits = 3;
    } else if ((r >> 4) == 0b001) {
      d = 1, mbits = 3;
    } else {
      d = 0, mbits = 3;
    }
    const unsigned mantissa = r & ((1u << mbits) - 1);
    int e = 0;
    if (d > 0) {
      const unsigned field = (r >> mbits) & ((1u << d) - 1);
      const int abs_e = static_cast<int>((1u << (d - 1)) | (field & ((1u << (d - 1)) - 1)));
      e = (field >> (d - 1)) != 0 ? -abs_e : abs_e;
    }
    magnitude = std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -mbits), e);
  }
  return static_cast<float>(negative ? -magnitude : magnitude);
}

std::uint8_t double_to_hifloat8(double value, Overflow overflow) {
  if (std::isnan(value)) return kNaN;
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const double a = std::fabs(value);
  if (a >= kOverflowThreshold) {
    return overflow == Overflow::kSaturate ? sign | encode_grid_magnitude(kMaxFinite) : sign | kInf;
  }
  const double q = round_magnitude(a);
  return q == 0.0 ? 0x00 : static_cast<std::uint8_t>(sign | encode_grid_magnitude(q));
}

float to_hif8(float value, bool saturate) {
  if (std::isnan(value) || std::isinf(value)) return value;
  const double a = std::fabs(static_cast<double>(value));
  if (a >= kOverflowThreshold) {
    const float big =
        saturate ? std::numeric_limits<float>::max() : std::numeric_limits<float>::infinity();
    return std::copysign(big, value);
  }
  return std::copysign(static_cast<float>(round_magnitude(a)), value);
}

}  // namespace tileops
