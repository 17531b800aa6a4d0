#include "tileops/core/scalar.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/core/float8.h"
#include "tileops/core/minifloat.h"

namespace tileops {
namespace {

template <typename T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void save(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// |value| rounded to 53 bits with round-to-odd (truncate, then set the last bit when anything
// was dropped). The result has more than two bits beyond every narrower format, so rounding
// it again to nearest gives exactly the once-rounded integer (no double-rounding error).
double int64_to_double_round_to_odd(std::int64_t value) {
  const std::uint64_t magnitude =
      value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  if (magnitude <= (std::uint64_t{1} << 53)) return static_cast<double>(value);
  const int shift = static_cast<int>(std::bit_width(magnitude)) - 53;
  std::uint64_t kept = magnitude >> shift;
  if ((magnitude & ((std::uint64_t{1} << shift) - 1)) != 0) kept |= 1;
  const double rounded = std::ldexp(static_cast<double>(kept), shift);
  return value < 0 ? -rounded : rounded;
}

// Truncates toward zero and saturates; NaN -> 0 (C++ leaves these undefined).
template <typename T>
T saturate_to(double value) {
  if (std::isnan(value)) return 0;
  const double t = std::trunc(value);
  if (t <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  // max() of int64 is not representable in double; compare against 2^63 instead.
  if (t >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

}  // namespace

double read_as_double(const void* element, DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return load<std::uint8_t>(element) != 0 ? 1.0 : 0.0;
    case DataType::kInt8:
      return load<std::int8_t>(element);
    case DataType::kInt16:
      return load<std::int16_t>(element);
    case DataType::kInt32:
      return load<std::int32_t>(element);
    case DataType::kInt64:
      return static_cast<double>(load<std::int64_t>(element));
    case DataType::kUInt8:
      return load<std::uint8_t>(element);
    case DataType::kFloat16:
      return float16_to_float(load<std::uint16_t>(element));
    case DataType::kBFloat16:
      return bfloat16_to_float(load<std::uint16_t>(element));
    case DataType::kFloat32:
      return load<float>(element);
    case DataType::kFloat64:
      return load<double>(element);
    case DataType::kFloat8E4M3FN:
      return float8_e4m3fn_to_float(load<std::uint8_t>(element));
    case DataType::kFloat8E5M2:
      return float8_e5m2_to_float(load<std::uint8_t>(element));
    case DataType::kHiFloat8:
      return hifloat8_to_float(load<std::uint8_t>(element));
  }
  throw_internal_error("read_as_double", "unknown dtype");
}

std::int64_t read_as_int64(const void* element, DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return load<std::uint8_t>(element) != 0 ? 1 : 0;
    case DataType::kInt8:
      return load<std::int8_t>(element);
    case DataType::kInt16:
      return load<std::int16_t>(element);
    case DataType::kInt32:
      return load<std::int32_t>(element);
    case DataType::kInt64:
      return load<std::int64_t>(element);
    case DataType::kUInt8:
      return load<std::uint8_t>(element);
    default:
      throw_internal_error("read_as_int64", "not an integral dtype");
  }
}

void write_from_double(double value, void* element, DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return save<std::uint8_t>(element, value != 0.0 ? 1 : 0);  // NaN is nonzero: true
    case DataType::kInt8:
      return save(element, saturate_to<std::int8_t>(value));
    case DataType::kInt16:
      return save(element, saturate_to<std::int16_t>(value));
    case DataType::kInt32:
      return save(element, saturate_to<std::int32_t>(value));
    case DataType::kInt64:
      return save(element, saturate_to<std::int64_t>(value));
    case DataType::kUInt8:
      return save(element, saturate_to<std::uint8_t>(value));
    case DataType::kFloat16:
      return save(element, static_cast<std::uint16_t>(encode_minifloat(value, kFloat16Format)));
    case DataType::kBFloat16:
      return save(element, static_cast<std::uint16_t>(encode_minifloat(value, kBFloat16Format)));
    case DataType::kFloat32:
      return save(element, static_cast<float>(value));
    case DataType::kFloat64:
      return save(element, value);
    case DataType::kFloat8E4M3FN:
      return save(element, double_to_float8_e4m3fn(value));
    case DataType::kFloat8E5M2:
      return save(element, double_to_float8_e5m2(value));
    case DataType::kHiFloat8:
      return save(element, double_to_hifloat8(value));
  }
  throw_internal_error("write_from_double", "unknown dtype");
}

void write_from_int64(std::int64_t value, void* element, DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return save<std::uint8_t>(element, value != 0 ? 1 : 0);
    case DataType::kInt8:
      return save(element, static_cast<std::int8_t>(std::clamp<std::int64_t>(value, -128, 127)));
    case DataType::kInt16:
      return save(element,
                  static_cast<std::int16_t>(std::clamp<std::int64_t>(value, -32768, 32767)));
    case DataType::kInt32:
      return save(element, static_cast<std::int32_t>(std::clamp<std::int64_t>(
                               value, std::numeric_limits<std::int32_t>::min(),
                               std::numeric_limits<std::int32_t>::max())));
    case DataType::kInt64:
      return save(element, value);
    case DataType::kUInt8:
      return save(element, static_cast<std::uint8_t>(std::clamp<std::int64_t>(value, 0, 255)));
    case DataType::kFloat32:
      return save(element, static_cast<float>(value));  // one rounding, to nearest
    case DataType::kFloat64:
      return save(element, static_cast<double>(value));  // one rounding, to nearest
    default:
      // Through double with round-to-odd: bfloat16 reaches 2^63, so a plain conversion to
      // double (rounding to nearest) could double-round; e.g. 2^60 + 2^52 + 1 must round up.
      return write_from_double(int64_to_double_round_to_odd(value), element, dtype);
  }
}

}  // namespace tileops
