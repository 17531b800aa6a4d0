// The cpu code generator: the C types of values and the expressions rounding or wrapping a
// computed value to its dtype.
#include <string_view>

#include "src/tl/cpu/codegen_types.h"

namespace tileops::tl::cpu {
namespace {

std::string dtype_id(DataType d) { return std::to_string(static_cast<int>(d)); }

}  // namespace

const char* compute_type(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat64:
      return "double";
    case DataType::kBool:
    case DataType::kUInt8:
      return "u8";
    case DataType::kInt8:
      return "i8";
    case DataType::kInt16:
      return "i16";
    case DataType::kInt32:
      return "i32";
    case DataType::kInt64:
      return "i64";
    default:
      return "float";
  }
}

std::int64_t compute_bytes(DataType dtype) {
  return std::string_view(compute_type(dtype)) == "float"
             ? 4
             : static_cast<std::int64_t>(size_of(dtype));
}

const char* memory_type(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "float";
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return "u16";
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kHiFloat8:
      return "u8";
    default:
      return compute_type(dtype);
  }
}

std::string round_float(DataType dtype, const std::string& x) {
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kFloat64:
      return x;
    case DataType::kFloat16:
      return "tl_round_f16(" + x + ")";
    case DataType::kBFloat16:
      return "tl_round_bf16(" + x + ")";
    case DataType::kFloat8E5M2:  // encoded and decoded inline (vectorises)
      return "tl_e5m2_f(tl_f2e5m2(" + x + "))";
    case DataType::kFloat8E4M3FN:
      return "tl_e4m3_f(tl_f2e4m3(" + x + "))";
    default:
      return "(float)rt->round(" + dtype_id(dtype) + ", " + x + ")";
  }
}

std::string round_double(DataType dtype, const std::string& x) {
  if (dtype == DataType::kFloat64) return x;
  if (dtype == DataType::kFloat32) return "(float)(" + x + ")";
  // 16-bit formats through float (vectorises; a double rounding, within one ulp of the dtype).
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
    return round_float(dtype, "(float)(" + x + ")");
  }
  return "(float)rt->round(" + dtype_id(dtype) + ", " + x + ")";  // one rounding from double
}

std::string wrap_int(DataType dtype, const std::string& x) {
  if (dtype == DataType::kBool) return "(u8)((" + x + ") != 0)";
  return std::string("(") + compute_type(dtype) + ")(" + x + ")";
}

// `v` without an outer rounding to 16-bit dtype `d`: storing rounds to d anyway, and rounding twice
// gives the same bits as once (NaN included), so a value rounded just before its store is
// converted once.
std::string strip_round(DataType d, const std::string& v) {
  if (d != DataType::kFloat16 && d != DataType::kBFloat16) return v;
  const std::string head = d == DataType::kBFloat16 ? "(tl_round_bf16(" : "(tl_round_f16(";
  if (v.size() < head.size() + 2 || v.compare(0, head.size(), head) != 0 ||
      v.compare(v.size() - 2, 2, "))") != 0)
    return v;
  const std::string inner = v.substr(head.size(), v.size() - head.size() - 2);
  int depth = 0;
  for (char c : inner) {
    depth += c == '(' ? 1 : (c == ')' ? -1 : 0);
    if (depth < 0) return v;  // the head's parentheses close before the end
  }
  return depth == 0 ? "(" + inner + ")" : v;
}

}  // namespace tileops::tl::cpu
