#include "tileops/core/float8.h"

#include "tileops/core/minifloat.h"

namespace tileops {
namespace {

MinifloatFormat with_overflow(MinifloatFormat format, Overflow overflow) {
  format.saturate = overflow == Overflow::kSaturate;
  return format;
}

}  // namespace

float float8_e4m3fn_to_float(std::uint8_t bits) {
  return static_cast<float>(decode_minifloat(bits, kFloat8E4M3FNFormat));
}

float float8_e5m2_to_float(std::uint8_t bits) {
  return static_cast<float>(decode_minifloat(bits, kFloat8E5M2Format));
}

std::uint8_t double_to_float8_e4m3fn(double value, Overflow overflow) {
  return static_cast<std::uint8_t>(
      encode_minifloat(value, with_overflow(kFloat8E4M3FNFormat, overflow)));
}

std::uint8_t double_to_float8_e5m2(double value, Overflow overflow) {
  return static_cast<std::uint8_t>(
      encode_minifloat(value, with_overflow(kFloat8E5M2Format, overflow)));
}

}  // namespace tileops
