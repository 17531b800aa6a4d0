// The cpu code generator: computation. Float32 arithmetic that IEEE rounds correctly (+ - * /
// sqrt, comparisons, min/max, rounding functions) is emitted in float and vectorises; it equals
// the interpreter's double-then-round bit for bit, and so does 16-bit arithmetic done in float
// and rounded once (float has more than 2p+2 bits for those formats). Transcendental and
// composite functions evaluate the interpreter's double formulas with the same libm and round
// once, so they agree with it exactly too; only reductions and matmul reorder their sums.
#include "src/tl/cpu/emitter.h"
#include "src/tl/interp/buffer.h"

namespace tileops::tl::cpu {

Strides row_major(const std::vector<std::int64_t>& shape) {
  return interp::row_major_strides(shape);
}

// Strides of `shape` read as if broadcast to `out` (0 on broadcast dims), aligned right.
Strides broadcast_strides(const std::vector<std::int64_t>& shape,
                          const std::vector<std::int64_t>& out) {
  Strides s(out.size(), 0);
  const Strides own = row_major(shape);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s[out.size() - shape.size() + i] = shape[i] == 1 ? 0 : own[i];
  }
  return s;
}

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

}  // namespace

const char* Emitter::flat_index(int id, const Type& result, const char* index) const {
  const Type& t = type(id);
  if (t.kind != TypeKind::kTile) return index;
  if (t.size() == 1) return "0";
  auto strip = [](const std::vector<std::int64_t>& shape) {
    std::size_t d = 0;
    while (d + 1 < shape.size() && shape[d] == 1) ++d;
    return std::vector<std::int64_t>(shape.begin() + static_cast<std::ptrdiff_t>(d), shape.end());
  };
  return strip(t.shape) == strip(result.shape) ? index : nullptr;
}

void Emitter::strided_loops(const std::vector<std::int64_t>& shape,
                            const std::vector<Strides>& strides, const Strides& bases,
                            const std::function<void(const std::vector<std::string>&)>& body) {
  const std::size_t rank = shape.size();
  open("");
  for (std::size_t d = 0; d < rank; ++d) {
    const std::string i = "tl_j" + std::to_string(d);
    open(cat({"for (i64 ", i, " = 0; ", i, " < ", std::to_string(shape[d]), "; ++", i, ")"}));
  }
  const Strides own = row_major(shape);
  std::string k = "0";
  for (std::size_t d = 0; d < rank; ++d)
    k += " + tl_j" + std::to_string(d) + " * " + std::to_string(own[d]);
  line() << "const i64 tl_k = " << k << ";\n";
  std::vector<std::string> index;
  for (std::size_t s = 0; s < strides.size(); ++s) {
    std::string e = std::to_string(bases[s]);
    for (std::size_t d = 0; d < rank; ++d) {
      if (strides[s][d] != 0)
        e += " + tl_j" + std::to_string(d) + " * " + std::to_string(strides[s][d]);
    }
    index.push_back(e);
  }
  body(index);
  for (std::size_t d = 0; d < rank; ++d) close();
  close();
}

void Emitter::elementwise_op(const Op& o) {
  const int res = o.results[0];
  const Type& rt = type(res);
  auto expr = [&](const std::vector<std::string>& x) {
    if (o.kind == OpKind::kUnary) {
      return unary_expr(o.as<UnaryAttrs>().op, type(o.operands[0]).dtype, rt.dtype, x[0]);
    }
    if (o.kind == OpKind::kBinary) {
      return binary_expr(o.as<BinaryAttrs>().op, type(o.operands[0]).dtype, rt.dtype, x[0], x[1]);
    }
    // Both operands as arguments: evaluated unconditionally, so a loop reading them (a 16-bit
    // tile widened where read) if-converts into a vector select.
    return cat({"tl_where<", compute_type(rt.dtype), ">(", x[0], ", ", x[1], ", ", x[2], ")"});
  };
  if (rt.kind != TypeKind::kTile) {
    std::vector<std::string> x;
    for (int id : o.operands) x.push_back(name(id));
    line() << "const " << compute_type(rt.dtype) << " " << name(res) << " = " << expr(x) << ";\n";
    return;
  }
  // Operands indexed like the result (same elements in the same order) or holding one element:
  // the op is a flat loop and may be fused.
  bool flat = true;
  for (int id : o.operands) flat = flat && flat_index(id, rt, "") != nullptr;
  if (flat) {
    std::vector<std::string> x;
    for (int id : o.operands) x.push_back(at(id, flat_index(id, rt, kIndex)));
    if (defer(res, expr(x))) return;
  }
  // A loop-carried tile read only here, of the result's type, takes the result in place (the
  // loop's yield copy is then skipped): each element is read before it is overwritten.
  int in_place = -1;
  for (int id : o.operands) {
    const Type& t = type(id);
    if (flat && in_place < 0 && consumable(id) && t.kind == TypeKind::kTile &&
        t.dtype == rt.dtype && t.shape == rt.shape)
      in_place = id;
  }
  if (in_place >= 0) {
    line() << compute_type(rt.dtype) << "* const " << name(res) << " = " << name(in_place) << ";\n";
  } else {
    declare(res);
  }
  if (flat) {
    std::vector<std::string> x;
    for (int id : o.operands) x.push_back(at(id, flat_index(id, rt, kIndex)));
    const std::string e = expr(x);
    auto element = [&e](const std::string& i) {
      std::string v = e;
      for (std::size_t p = v.find(kIndex); p != std::string::npos; p = v.find(kIndex, p + i.size()))
        v.replace(p, 3, i);
      return v;
    };
    // A row sum of the result is computed in the same loop (softmax: exp, then its sum), so the
    // result is not read back.
    // Its store, when that is the result's other use and its tile lies contiguous in the tensor,
    // is this loop's too: the elements go to memory instead of the tile (sinkable_store).
    if (const Op* r = sum_of(res); r != nullptr) {
      summed_[static_cast<std::size_t>(r->results[0])] = true;
      const std::string out = declare_reduced(*r);
      std::string sink = name(res);
      if (const Op* s = sinkable_store(o, res); s != nullptr) {
        const std::string t = name(s->operands[1]);
        std::vector<std::string> offsets;
        for (std::size_t d = 0; d < rt.shape.size(); ++d)
          offsets.push_back(name(s->operands[2 + d]));
        const auto [inside, at_] = contiguous_tile(t, rt.shape, offsets, false);
        sink = name(res) + "_sink";
        line() << "const bool " << name(res) << "_sunk = " << inside << ";\n";
        line() << "float* const " << sink << " = " << name(res) << "_sunk ? " << t << " + (" << at_
               << ") : " << name(res) << ";\n";
        sunk_[static_cast<std::size_t>(res)] = true;
      }
      open("");
      sum_runs(*r, element, sink, out);
      close();
      return;
    }
    line() << "for (i64 k = 0; k < " << rt.size() << "; ++k) " << name(res)
           << "[k] = " << element("k") << ";\n";
    return;
  }
  std::vector<Strides> strides;
  for (int id : o.operands) strides.push_back(broadcast_strides(type(id).shape, rt.shape));
  strided_loops(rt.shape, strides, Strides(strides.size(), 0),
                [&](const std::vector<std::string>& index) {
                  std::vector<std::string> x;
                  for (std::size_t i = 0; i < o.operands.size(); ++i)
                    x.push_back(at(o.operands[i], index[i]));
                  line() << name(res) << "[tl_k] = " << expr(x) << ";\n";
                });
}

namespace {

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

void Emitter::cast_op(const Op& o) {
  const int res = o.results[0];
  const int x = o.operands[0];
  const DataType s = type(x).dtype, d = type(res).dtype;
  const CastAttrs& cast = o.as<CastAttrs>();
  const RoundMode mode = cast.round;
  auto expr = [&](const std::string& v) -> std::string {
    if (cast.bitcast) return cat({"(", from_bits(d, bits_of(s, v)), ")"});
    if (d == DataType::kBool) return "(u8)(" + v + " != 0)";
    if (!is_floating(s)) {
      if (!is_floating(d)) return wrap_int(d, "(i64)" + v);
      if (d == DataType::kFloat32) return "tl_i2f((i64)" + v + ")";
      if (d == DataType::kFloat64) return "tl_i2d((i64)" + v + ")";
      return round_double(d, "tl_i2d((i64)" + v + ")");
    }
    if (!is_floating(d)) {
      static const char* const kRound[] = {"__builtin_nearbyint", "__builtin_floor",
                                           "__builtin_ceil", "__builtin_trunc", "__builtin_round"};
      std::string n =
          cat({"tl_f2i(", kRound[static_cast<std::size_t>(mode)], "((double)", v, "))"});
      if (d == DataType::kInt64) return n;
      const std::int64_t lo =
          d == DataType::kUInt8 ? 0 : -(std::int64_t{1} << (8 * size_of(d) - 1));
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
  };
  if (type(res).kind != TypeKind::kTile) {
    line() << "const " << compute_type(d) << " " << name(res) << " = " << expr(name(x)) << ";\n";
    return;
  }
  // A bitcast of a tile kept as 16-bit bits (a load) reads them, not the widened value.
  const bool raw_bits = cast.bitcast && widened_[static_cast<std::size_t>(x)];
  const auto element = [&](const std::string& index) {
    if (!raw_bits) return expr(at(x, index));
    const char* bits = s == DataType::kBFloat16 ? "tl_bf_bits(" : "tl_h_bits(";
    return cat({"(", from_bits(d, cat({bits, name(x), "[", index, "])"})), ")"});
  };
  const bool widening = is_floating(s) && is_floating(d) && size_of(d) > size_of(s);
  if (type(x).kind == TypeKind::kTile && defer(res, element(kIndex), true, widening)) return;
  declare(res);
  line() << "for (i64 k = 0; k < " << type(res).size() << "; ++k) " << name(res)
         << "[k] = " << element("k") << ";\n";
}

}  // namespace tileops::tl::cpu
