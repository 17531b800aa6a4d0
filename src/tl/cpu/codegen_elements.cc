// The C expressions of elements (elements.h): each op's formula over its operands' expressions,
// and the recursion over the plan that evaluates a fused value where it is read. Float32
// arithmetic that IEEE rounds correctly (+ - * / sqrt, comparisons, min/max, rounding functions)
// is emitted in float and vectorises; it equals the interpreter's double-then-round bit for bit,
// and so does 16-bit arithmetic done in float and rounded once (float has more than 2p+2 bits for
// those formats). Transcendental and composite functions evaluate the interpreter's double
// formulas with the same libm and round once, so they agree with it exactly too.
#include <algorithm>

#include "src/tl/cpu/codegen_types.h"
#include "src/tl/cpu/elements.h"

namespace tileops::tl::cpu {
namespace {

std::string double_unary(UnaryOp op, const std::string& x) {
  const std::string a = "(double)" + x;
  switch (op) {
    case UnaryOp::kExp:
      return "exp(" + a + ")";
    case UnaryOp::kExp2:
      return "exp2(" + a + ")";
    case UnaryOp::kExpm1:
      return "expm1(" + a + ")";
    case UnaryOp::kLog:
      return "log(" + a + ")";
    case UnaryOp::kLog2:
      return "log2(" + a + ")";
    case UnaryOp::kLog1p:
      return "log1p(" + a + ")";
    case UnaryOp::kRsqrt:
      return "1.0 / __builtin_sqrt(" + a + ")";
    case UnaryOp::kSin:
      return "sin(" + a + ")";
    case UnaryOp::kCos:
      return "cos(" + a + ")";
    case UnaryOp::kTan:
      return "tan(" + a + ")";
    case UnaryOp::kSinh:
      return "sinh(" + a + ")";
    case UnaryOp::kCosh:
      return "cosh(" + a + ")";
    case UnaryOp::kTanh:
      return "tanh(" + a + ")";
    case UnaryOp::kErf:
      return "erf(" + a + ")";
    case UnaryOp::kSigmoid:
      return "1.0 / (1.0 + exp(-" + a + "))";
    case UnaryOp::kGeluErf:
      return "0.5 * " + a + " * erfc(" + a + " * -0.70710678118654752440)";
    case UnaryOp::kGeluTanh:
      return "tl_gelu_tanh(" + a + ")";
    case UnaryOp::kSilu:
      return a + " / (1.0 + exp(-" + a + "))";
    case UnaryOp::kSoftplus:
      return "__builtin_fmax(" + a + ", 0.0) + log1p(exp(-__builtin_fabs(" + a + ")))";
    default:
      return "";
  }
}

// Float unary ops IEEE rounds correctly in the compute type itself ("" when not one of them).
std::string native_unary(UnaryOp op, const std::string& x, bool f64) {
  const std::string sfx = f64 ? "" : "f";
  switch (op) {
    case UnaryOp::kAbs:
      return "__builtin_fabs" + sfx + "(" + x + ")";
    case UnaryOp::kCeil:
      return "__builtin_ceil" + sfx + "(" + x + ")";
    case UnaryOp::kFloor:
      return "__builtin_floor" + sfx + "(" + x + ")";
    case UnaryOp::kRound:
      return "__builtin_rint" + sfx + "(" + x + ")";
    case UnaryOp::kTrunc:
      return "__builtin_trunc" + sfx + "(" + x + ")";
    case UnaryOp::kSqrt:
      return "__builtin_sqrt" + sfx + "(" + x + ")";
    case UnaryOp::kRelu:
      return "tl_relu" + sfx + "(" + x + ")";
    case UnaryOp::kNegative:
      return "-" + x;
    case UnaryOp::kReciprocal:
      return std::string(f64 ? "1.0" : "1.0f") + " / " + x;
    default:
      return "";
  }
}

std::string unary_expr(UnaryOp op, DataType dx, DataType dr, const std::string& x) {
  if (op == UnaryOp::kLogicalNot) return "(u8)(" + x + " == 0)";
  if (is_floating(dx)) {
    if (op == UnaryOp::kIsnan) return "(u8)(" + x + " != " + x + ")";
    if (op == UnaryOp::kIsinf) return "(u8)__builtin_isinf(" + x + ")";
    const std::string native = native_unary(op, x, dx == DataType::kFloat64);
    if (!native.empty()) return round_float(dr, native);
    // exp (softmax's hot loop) in float, 8 lanes at a time, within 2 ulps.
    if (op == UnaryOp::kExp && dx != DataType::kFloat64)
      return round_float(dr, "tl_expf(" + x + ")");
    // exp2: the double formula rounded to float, or under fast_math a float one (tl_exp2f).
    const bool through_float =
        dr == DataType::kFloat32 || dr == DataType::kFloat16 || dr == DataType::kBFloat16;
    if (op == UnaryOp::kExp2 && dx != DataType::kFloat64 && through_float)
      return round_float(dr, "tl_exp2f(" + x + ")");
    // gelu in float, 8 lanes at a time, within 8 ulps.
    if (op == UnaryOp::kGeluErf && dx != DataType::kFloat64)
      return round_float(dr, "tl_gelu_erff(" + x + ")");
    return round_double(dr, double_unary(op, x));
  }
  const std::string i = "(i64)" + x;
  switch (op) {
    case UnaryOp::kAbs:
      return wrap_int(dr, i + " < 0 ? (i64)(0 - (u64)" + i + ") : " + i);
    case UnaryOp::kNegative:
      return wrap_int(dr, "(i64)(0 - (u64)" + i + ")");
    case UnaryOp::kRelu:
      return wrap_int(dr, i + " > 0 ? " + i + " : 0");
    case UnaryOp::kBitNot:
      return dx == DataType::kBool ? "(u8)!" + x : wrap_int(dr, "~" + i);
    default:
      return x;
  }
}

std::string binary_expr(BinaryOp op, DataType da, DataType dr, const std::string& a,
                        const std::string& b) {
  const char* cmp = nullptr;
  switch (op) {
    case BinaryOp::kEq:
      cmp = "==";
      break;
    case BinaryOp::kNe:
      cmp = "!=";
      break;
    case BinaryOp::kLt:
      cmp = "<";
      break;
    case BinaryOp::kLe:
      cmp = "<=";
      break;
    case BinaryOp::kGt:
      cmp = ">";
      break;
    case BinaryOp::kGe:
      cmp = ">=";
      break;
    case BinaryOp::kLogicalAnd:
      return "(u8)(" + a + " != 0 && " + b + " != 0)";
    case BinaryOp::kLogicalOr:
      return "(u8)(" + a + " != 0 || " + b + " != 0)";
    default:
      break;
  }
  if (cmp != nullptr) return "(u8)(" + a + " " + cmp + " " + b + ")";
  if (is_floating(da)) {
    const bool f64 = da == DataType::kFloat64;
    const std::string da_ = "(double)" + a, db_ = "(double)" + b;
    switch (op) {
      case BinaryOp::kAdd:
        return round_float(dr, "(" + a + " + " + b + ")");
      case BinaryOp::kSub:
        return round_float(dr, "(" + a + " - " + b + ")");
      case BinaryOp::kMul:
        return round_float(dr, "(" + a + " * " + b + ")");
      case BinaryOp::kDiv:
        return round_float(dr, "(" + a + " / " + b + ")");
      case BinaryOp::kMaximum:
        return round_float(dr, std::string(f64 ? "tl_fmax(" : "tl_fmaxf(") + a + ", " + b + ")");
      case BinaryOp::kMinimum:
        return round_float(dr, std::string(f64 ? "tl_fmin(" : "tl_fminf(") + a + ", " + b + ")");
      case BinaryOp::kFloorDiv:
        return round_double(dr, "__builtin_floor(" + da_ + " / " + db_ + ")");
      case BinaryOp::kMod:
        return round_double(dr, "tl_fmod_py(" + da_ + ", " + db_ + ")");
      case BinaryOp::kPow:
        return round_double(dr, "pow(" + da_ + ", " + db_ + ")");
      default:
        return "0";
    }
  }
  const std::string ia = "(i64)" + a, ib = "(i64)" + b;
  const std::string ua = "(u64)" + ia, ub = "(u64)" + ib;
  const std::string bits =
      std::to_string(da == DataType::kBool ? 1 : static_cast<int>(8 * size_of(da)));
  switch (op) {
    case BinaryOp::kAdd:
      return wrap_int(dr, "(i64)(" + ua + " + " + ub + ")");
    case BinaryOp::kSub:
      return wrap_int(dr, "(i64)(" + ua + " - " + ub + ")");
    case BinaryOp::kMul:
      return wrap_int(dr, "(i64)(" + ua + " * " + ub + ")");
    case BinaryOp::kFloorDiv:
      return wrap_int(dr, "tl_floordiv(" + ia + ", " + ib + ")");
    case BinaryOp::kMod:
      return wrap_int(dr, "tl_mod(" + ia + ", " + ib + ")");
    case BinaryOp::kMaximum:
      return wrap_int(dr, ia + " > " + ib + " ? " + ia + " : " + ib);
    case BinaryOp::kMinimum:
      return wrap_int(dr, ia + " < " + ib + " ? " + ia + " : " + ib);
    case BinaryOp::kBitAnd:
      return wrap_int(dr, ia + " & " + ib);
    case BinaryOp::kBitOr:
      return wrap_int(dr, ia + " | " + ib);
    case BinaryOp::kBitXor:
      return wrap_int(dr, ia + " ^ " + ib);
    case BinaryOp::kShl:
      return wrap_int(dr, "tl_shl(" + ia + ", " + ib + ", " + bits + ")");
    case BinaryOp::kShr:
      return wrap_int(dr, "tl_shr(" + ia + ", " + ib + ", " + bits + ")");
    default:
      return "0";
  }
}

// bitcast: the bits of compute-typed `v` of dtype `s` (an unsigned expression), and the value of
// dtype `d` those bits hold (bitcast_compatible dtypes).
std::string bits_of(DataType s, const std::string& v) {
  switch (s) {
    case DataType::kFloat32:
      return "tl_fbits(" + v + ")";
    case DataType::kFloat64:
      return "tl_dbits(" + v + ")";
    case DataType::kFloat16:
      return "tl_f2h(" + v + ")";
    case DataType::kBFloat16:
      return "tl_f2bf(" + v + ")";
    case DataType::kFloat8E5M2:
      return "tl_f2e5m2(" + v + ")";
    case DataType::kFloat8E4M3FN:
      return "tl_f2e4m3(" + v + ")";
    case DataType::kHiFloat8:
      return "tl_f8_code(rt, " + v + ", " + std::to_string(static_cast<int>(s)) + ")";
    default:
      return "(u64)(i64)" + v;
  }
}

std::string from_bits(DataType d, const std::string& b) {
  switch (d) {
    case DataType::kFloat32:
      return "tl_bitsf((u32)" + b + ")";
    case DataType::kFloat64:
      return "tl_bitsd((u64)" + b + ")";
    case DataType::kFloat16:
      return "tl_h2f((u16)" + b + ")";
    case DataType::kBFloat16:
      return "tl_bf2f((u16)" + b + ")";
    case DataType::kFloat8E5M2:
      return "tl_e5m2_f((u8)" + b + ")";
    case DataType::kFloat8E4M3FN:
      return "tl_e4m3_f((u8)" + b + ")";
    case DataType::kHiFloat8:
      return "tl_f8_value(rt, (u8)" + b + ", " + std::to_string(static_cast<int>(d)) + ")";
    case DataType::kInt8:
      return "(i8)(u8)" + b;
    case DataType::kInt16:
      return "(i16)(u16)" + b;
    case DataType::kInt32:
      return "(i32)(u32)" + b;
    case DataType::kInt64:
      return "(i64)(u64)" + b;
    default:
      return "(u8)" + b;
  }
}

}  // namespace

std::string elementwise_expr(const Function& f, const Op& o, const std::vector<std::string>& x) {
  const DataType dr = f.type_of(o.results[0]).dtype;
  if (o.kind == OpKind::kUnary) {
    return unary_expr(o.as<UnaryAttrs>().op, f.type_of(o.operands[0]).dtype, dr, x[0]);
  }
  if (o.kind == OpKind::kBinary) {
    return binary_expr(o.as<BinaryAttrs>().op, f.type_of(o.operands[0]).dtype, dr, x[0], x[1]);
  }
  // Both operands as arguments: evaluated unconditionally, so a loop reading them (a 16-bit
  // tile widened where read) if-converts into a vector select.
  return cat({"tl_where<", compute_type(dr), ">(", x[0], ", ", x[1], ", ", x[2], ")"});
}

std::string cast_expr(const Function& f, const Op& o, const std::string& v) {
  const DataType s = f.type_of(o.operands[0]).dtype, d = f.type_of(o.results[0]).dtype;
  const CastAttrs& cast = o.as<CastAttrs>();
  const RoundMode mode = cast.round;
  if (cast.bitcast) return cat({"(", from_bits(d, bits_of(s, v)), ")"});
  if (d == DataType::kBool) return "(u8)(" + v + " != 0)";
  if (!is_floating(s)) {
    if (!is_floating(d)) return wrap_int(d, "(i64)" + v);
    if (d == DataType::kFloat32) return "tl_i2f((i64)" + v + ")";
    if (d == DataType::kFloat64) return "tl_i2d((i64)" + v + ")";
    return round_double(d, "tl_i2d((i64)" + v + ")");
  }
  if (!is_floating(d)) {
    static const char* const kRound[] = {"__builtin_nearbyint", "__builtin_floor", "__builtin_ceil",
                                         "__builtin_trunc", "__builtin_round"};
    std::string n = cat({"tl_f2i(", kRound[static_cast<std::size_t>(mode)], "((double)", v, "))"});
    if (d == DataType::kInt64) return n;
    const std::int64_t lo = d == DataType::kUInt8 ? 0 : -(std::int64_t{1} << (8 * size_of(d) - 1));
    const std::int64_t hi = d == DataType::kUInt8 ? 255 : -(lo + 1);
    return std::string("(") + compute_type(d) + ")tl_clamp(" + n + ", " + std::to_string(lo) +
           "ll, " + std::to_string(hi) + "ll)";
  }
  if (mode != RoundMode::kRint) {
    return std::string("(") + compute_type(d) + ")rt->cast((double)" + v + ", " +
           std::to_string(static_cast<int>(d)) + ", " + std::to_string(static_cast<int>(mode)) +
           ")";
  }
  if (d == DataType::kFloat64) return "(double)" + v;
  if (d == DataType::kFloat32) return "(float)" + v;
  if (s == DataType::kFloat64) return round_double(d, v);
  return round_float(d, v);
}

std::string Elements::at(int id, const std::string& index, const LaneBlocks* lanes) const {
  const ValuePlan& p = plan_[static_cast<std::size_t>(id)];
  if (p.widened) {
    if (lanes != nullptr && index == lanes->index &&
        std::find(lanes->tiles.begin(), lanes->tiles.end(), id) != lanes->tiles.end())
      return cat({"tl_w_", value_name(id), "[q]"});
    const char* widen = f_.type_of(id).dtype == DataType::kBFloat16 ? "tl_bf2f(" : "tl_h2f(";
    return cat({widen, value_name(id), "[", index, "])"});
  }
  if (p.fused) return cat({"(", of(*p.def, index, lanes), ")"});
  return f_.type_of(id).kind == TypeKind::kTile ? cat({value_name(id), "[", index, "]"})
                                                : value_name(id);
}

std::string Elements::of(const Op& o, const std::string& index, const LaneBlocks* lanes) const {
  const Type& rt = f_.type_of(o.results[0]);
  if (o.kind == OpKind::kCast) {
    const int x = o.operands[0];
    const DataType s = f_.type_of(x).dtype, d = rt.dtype;
    // A bitcast of a tile kept as 16-bit bits (a load) reads them, not the widened value.
    if (o.as<CastAttrs>().bitcast && plan_[static_cast<std::size_t>(x)].widened) {
      const char* bits = s == DataType::kBFloat16 ? "tl_bf_bits(" : "tl_h_bits(";
      return cat({"(", from_bits(d, cat({bits, value_name(x), "[", index, "])"})), ")"});
    }
    return cast_expr(f_, o, at(x, index, lanes));
  }
  std::vector<std::string> x;
  for (int id : o.operands) {
    x.push_back(at(id, flat_read(f_, id, rt) == FlatRead::kFirst ? "0" : index, lanes));
  }
  return elementwise_expr(f_, o, x);
}

std::string lane_block_fills(const Function& f, const std::vector<int>& tiles,
                             const std::string& base) {
  std::string fills;
  for (int id : tiles) {
    const std::string tile = value_name(id), block = "tl_w_" + tile;
    fills += cat({"alignas(64) float ", block, "[64]; tl_widen64<",
                  f.type_of(id).dtype == DataType::kBFloat16 ? "true" : "false", ">(", tile, " + (",
                  base, "), ", block, "); "});
  }
  return fills;
}

}  // namespace tileops::tl::cpu
