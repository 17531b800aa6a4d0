// Element types of tensors and tiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tileops {

enum class DataType : std::uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kFloat8E4M3FN,  // 1-4-3, max 448, no infinities, NaN = S.1111.111
  kFloat8E5M2,    // 1-5-2, IEEE-like with infinities
  kHiFloat8,      // HiF8 (arXiv 2409.16626), see core/float8.h
};

inline constexpr int kNumDataTypes = 13;

// Bytes per element.
std::size_t size_of(DataType dtype);
// Canonical lower-case name ("float32", "bfloat16", "float8_e4m3fn", ...).
std::string_view name_of(DataType dtype);
// Inverse of name_of; also accepts the short aliases f32/f16/bf16/half/float/double/int/long.
std::optional<DataType> parse_data_type(std::string_view name);

bool is_floating(DataType dtype);  // including the 8-bit float formats
bool is_integral(DataType dtype);  // bool excluded
// float32, float16 or bfloat16: the types the float operators compute on.
bool is_standard_float(DataType dtype);

}  // namespace tileops
