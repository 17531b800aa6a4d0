// The integer and bool side of core/scalar.h: reads, and writes that truncate toward zero,
// saturate at the type's range and map NaN to 0; and exact integer -> float writes.
#include "tileops/core/scalar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tileops/core/float16.h"

namespace tileops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T>
T written(double value, DataType dtype) {
  T out{};
  write_from_double(value, &out, dtype);
  return out;
}

template <typename T>
T written_int(std::int64_t value, DataType dtype) {
  T out{};
  write_from_int64(value, &out, dtype);
  return out;
}

TEST(Scalar, WritesTruncateSaturateAndMapNaNToZero) {
  using I8 = std::int8_t;
  EXPECT_EQ(written<I8>(2.7, DataType::kInt8), 2);
  EXPECT_EQ(written<I8>(-2.7, DataType::kInt8), -2);
  EXPECT_EQ(written<I8>(-0.5, DataType::kInt8), 0);
  EXPECT_EQ(written<I8>(127.9, DataType::kInt8), 127);
  EXPECT_EQ(written<I8>(128.0, DataType::kInt8), 127);
  EXPECT_EQ(written<I8>(-128.9, DataType::kInt8), -128);
  EXPECT_EQ(written<I8>(-1e300, DataType::kInt8), -128);
  EXPECT_EQ(written<I8>(kInf, DataType::kInt8), 127);
  EXPECT_EQ(written<I8>(kNaN, DataType::kInt8), 0);
  EXPECT_EQ(written<std::uint8_t>(-1.0, DataType::kUInt8), 0);
  EXPECT_EQ(written<std::uint8_t>(-kInf, DataType::kUInt8), 0);
  EXPECT_EQ(written<std::uint8_t>(255.99, DataType::kUInt8), 255);
  EXPECT_EQ(written<std::uint8_t>(256.0, DataType::kUInt8), 255);
  EXPECT_EQ(written<std::uint8_t>(kNaN, DataType::kUInt8), 0);
  EXPECT_EQ(written<std::int16_t>(32767.5, DataType::kInt16), 32767);
  EXPECT_EQ(written<std::int16_t>(-40000.0, DataType::kInt16), -32768);
  EXPECT_EQ(written<std::int32_t>(2147483647.9, DataType::kInt32), 2147483647);
  EXPECT_EQ(written<std::int32_t>(3e9, DataType::kInt32), 2147483647);
  EXPECT_EQ(written<std::int32_t>(-2147483648.9, DataType::kInt32), -2147483647 - 1);
  EXPECT_EQ(written<std::int32_t>(-kInf, DataType::kInt32), -2147483647 - 1);
  using I64 = std::int64_t;
  constexpr I64 kMax = std::numeric_limits<I64>::max();
  constexpr I64 kMin = std::numeric_limits<I64>::min();
  EXPECT_EQ(written<I64>(0x1p63, DataType::kInt64), kMax);
  EXPECT_EQ(written<I64>(9.3e18, DataType::kInt64), kMax);
  EXPECT_EQ(written<I64>(-0x1p63, DataType::kInt64), kMin);
  EXPECT_EQ(written<I64>(-1e19, DataType::kInt64), kMin);
  EXPECT_EQ(written<I64>(0x1p62, DataType::kInt64), I64{1} << 62);
  EXPECT_EQ(written<I64>(-123456789012.75, DataType::kInt64), -123456789012);
  EXPECT_EQ(written<I64>(kNaN, DataType::kInt64), 0);
}

TEST(Scalar, BoolIsNonzero) {
  EXPECT_EQ(written<std::uint8_t>(0.0, DataType::kBool), 0);
  EXPECT_EQ(written<std::uint8_t>(-0.0, DataType::kBool), 0);
  EXPECT_EQ(written<std::uint8_t>(0.25, DataType::kBool), 1);
  EXPECT_EQ(written<std::uint8_t>(-3.0, DataType::kBool), 1);
  EXPECT_EQ(written<std::uint8_t>(kNaN, DataType::kBool), 1);
  EXPECT_EQ(written_int<std::uint8_t>(-5, DataType::kBool), 1);
  EXPECT_EQ(written_int<std::uint8_t>(0, DataType::kBool), 0);
  const std::uint8_t two = 2;
  EXPECT_EQ(read_as_double(&two, DataType::kBool), 1.0);
  EXPECT_EQ(read_as_int64(&two, DataType::kBool), 1);
}

TEST(Scalar, ReadsEveryIntegerTypeExactly) {
  const std::int8_t i8 = -128;
  const std::int16_t i16 = -32768;
  const std::int32_t i32 = -2147483647 - 1;
  const std::int64_t i64 = std::numeric_limits<std::int64_t>::min() + 1;
  const std::uint8_t u8 = 255;
  EXPECT_EQ(read_as_double(&i8, DataType::kInt8), -128.0);
  EXPECT_EQ(read_as_double(&i16, DataType::kInt16), -32768.0);
  EXPECT_EQ(read_as_double(&i32, DataType::kInt32), -2147483648.0);
  EXPECT_EQ(read_as_double(&u8, DataType::kUInt8), 255.0);
  EXPECT_EQ(read_as_int64(&i64, DataType::kInt64), i64);
  EXPECT_EQ(read_as_int64(&i8, DataType::kInt8), -128);
  EXPECT_EQ(read_as_int64(&u8, DataType::kUInt8), 255);
}

TEST(Scalar, IntegerWritesClampAndRoundOnce) {
  EXPECT_EQ(written_int<std::int8_t>(1000, DataType::kInt8), 127);
  EXPECT_EQ(written_int<std::int16_t>(-100000, DataType::kInt16), -32768);
  EXPECT_EQ(written_int<std::int32_t>(std::int64_t{1} << 40, DataType::kInt32), 2147483647);
  EXPECT_EQ(written_int<std::uint8_t>(-1, DataType::kUInt8), 0);
  EXPECT_EQ(written_int<std::uint8_t>(256, DataType::kUInt8), 255);
  // One rounding to nearest: 2^60 + 2^36 + 1 is just above the float32 midpoint.
  const std::int64_t above_mid = (std::int64_t{1} << 60) + (std::int64_t{1} << 36) + 1;
  EXPECT_EQ(written_int<float>(above_mid, DataType::kFloat32), 0x1.000002p60f);
  EXPECT_EQ(written_int<double>(above_mid, DataType::kFloat64), static_cast<double>(above_mid));
  // bfloat16 reaches 2^63: 2^60 + 2^52 + 1 rounds up (through plain double it would tie down).
  const std::int64_t bf16_trap = (std::int64_t{1} << 60) + (std::int64_t{1} << 52) + 1;
  EXPECT_EQ(bfloat16_to_float(written_int<std::uint16_t>(bf16_trap, DataType::kBFloat16)),
            0x1.02p60f);
  EXPECT_EQ(bfloat16_to_float(written_int<std::uint16_t>(-bf16_trap, DataType::kBFloat16)),
            -0x1.02p60f);
  EXPECT_EQ(float16_to_float(written_int<std::uint16_t>(65520, DataType::kFloat16)), INFINITY);
  EXPECT_EQ(float16_to_float(written_int<std::uint16_t>(65519, DataType::kFloat16)), 65504.0f);
  EXPECT_EQ(bfloat16_to_float(written_int<std::uint16_t>(std::numeric_limits<std::int64_t>::min(),
                                                         DataType::kBFloat16)),
            -0x1p63f);
}

}  // namespace
}  // namespace tileops
