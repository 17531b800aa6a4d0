#include "tileops/core/data_type.h"

#include <array>

namespace tileops {
namespace {

struct TypeInfo {
  std::string_view name;
  std::size_t size;
};

constexpr std::array<TypeInfo, kNumDataTypes> kInfo = {{
    {"bool", 1},
    {"int8", 1},
    {"int16", 2},
    {"int32", 4},
    {"int64", 8},
    {"uint8", 1},
    {"float16", 2},
    {"bfloat16", 2},
    {"float32", 4},
    {"float64", 8},
    {"float8_e4m3fn", 1},
    {"float8_e5m2", 1},
    {"hifloat8", 1},
}};

const TypeInfo& info(DataType dtype) { return kInfo.at(static_cast<std::size_t>(dtype)); }

}  // namespace

std::size_t size_of(DataType dtype) { return info(dtype).size; }

std::string_view name_of(DataType dtype) { return info(dtype).name; }

std::optional<DataType> parse_data_type(std::string_view name) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    if (kInfo[i].name == name) return static_cast<DataType>(i);
  }
  struct Alias {
    std::string_view name;
    DataType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"f32", DataType::kFloat32},    {"float", DataType::kFloat32}, {"f16", DataType::kFloat16},
      {"half", DataType::kFloat16},   {"bf16", DataType::kBFloat16}, {"f64", DataType::kFloat64},
      {"double", DataType::kFloat64}, {"int", DataType::kInt32},     {"long", DataType::kInt64},
      {"hif8", DataType::kHiFloat8},
  };
  for (const Alias& alias : kAliases) {
    if (alias.name == name) return alias.dtype;
  }
  return std::nullopt;
}

bool is_floating(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kHiFloat8:
      return true;
    default:
      return false;
  }
}

bool is_integral(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
      return true;
    default:
      return false;
  }
}

bool is_standard_float(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

}  // namespace tileops
