// Builder: elementwise binary and unary operations, where, casts.
#include <cmath>

#include "src/tl/builder/tracer.h"
#include "tileops/tl/ops.h"

namespace tileops::tl {
namespace {

void need_value(Tracer& t, const Operand& x, const char* construct) {
  const TypeKind kind = t.type_of(x.value.id()).kind;
  if (kind != TypeKind::kTile && kind != TypeKind::kScalar) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(x.loc), construct,
                "operand must be a tile or scalar, got " + t.type_of(x.value.id()).to_string());
  }
}

bool is_bitwise_or_logical(BinaryOp op) { return op >= BinaryOp::kBitAnd; }

// x != 0 as a bool value (logical ops on non-bool operands).
int not_zero(Tracer& t, int x, const Loc& loc) {
  Op ne = make_op(OpKind::kBinary, loc);
  ne.attrs = BinaryAttrs{BinaryOp::kNe};
  ne.operands = {x, t.constant(0, t.type_of(x).dtype, false, to_loc(loc))};
  return t.append1(std::move(ne));
}

thread_local IntDivision g_int_division = IntDivision::kTrue;

bool is_int(DataType dtype) { return !is_floating(dtype) && dtype != DataType::kBool; }

// a / b truncated toward zero from the floor quotient q: q + 1 where the division is inexact
// and q is negative (the operands' signs differ). A zero divisor gives 0 (floordiv's 0, mod's 0).
Value truncating_division(Tracer& t, int ia, int ib, const Loc& loc) {
  const Operand a(Value::from_id(ia), loc), b(Value::from_id(ib), loc);
  const auto ca = t.constant_value(ia);
  const auto cb = t.constant_value(ib);
  if (ca && cb) {  // trace-time extents stay static
    const auto x = static_cast<std::int64_t>(*ca);
    const auto y = static_cast<std::int64_t>(*cb);
    std::int64_t q = 0;
    if (y == -1) {
      q = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x));  // wraps as the kernel
    } else if (y != 0) {
      q = x / y;
    }
    return Value::from_id(t.constant(static_cast<long double>(q), t.type_of(ia).dtype,
                                     t.is_weak(ia) && t.is_weak(ib), to_loc(loc)));
  }
  const Operand zero(0, loc), one(1, loc);
  const Value q = binary(BinaryOp::kFloorDiv, a, b, loc);
  const Value inexact = binary(BinaryOp::kNe, binary(BinaryOp::kMod, a, b, loc), zero, loc);
  const Value round_up =
      binary(BinaryOp::kLogicalAnd, inexact, binary(BinaryOp::kLt, q, zero, loc), loc);
  return where(round_up, binary(BinaryOp::kAdd, q, one, loc), q, loc);
}

}  // namespace

IntDivision set_int_division(IntDivision mode) {
  const IntDivision previous = g_int_division;
  g_int_division = mode;
  return previous;
}

IntDivision int_division() { return g_int_division; }

Value binary(BinaryOp op, const Operand& a, const Operand& b, Loc loc) {
  const char* construct = name_of(op);
  Tracer& t = Tracer::current(construct, loc);
  need_value(t, a, construct);
  need_value(t, b, construct);
  auto [ia, ib] = promote(t, a, b, loc);
  const DataType dtype = t.type_of(ia).dtype;
  if (op == BinaryOp::kDiv && g_int_division == IntDivision::kTrunc && is_int(dtype)) {
    return truncating_division(t, ia, ib, loc);
  }
  // True division and pow of integers compute in float32 (Python semantics).
  if ((op == BinaryOp::kDiv || op == BinaryOp::kPow) && !is_floating(dtype)) {
    ia = coerce(t, ia, DataType::kFloat32, loc);
    ib = coerce(t, ib, DataType::kFloat32, loc);
  }
  if ((op == BinaryOp::kLogicalAnd || op == BinaryOp::kLogicalOr) && dtype != DataType::kBool) {
    ia = not_zero(t, ia, loc);
    ib = not_zero(t, ib, loc);
  }
  // Fold trace-time integer arithmetic (extents computed from ConstExprs stay static).
  const auto ca = t.constant_value(ia);
  const auto cb = t.constant_value(ib);
  if (ca && cb && !is_floating(t.type_of(ia).dtype) && t.type_of(ia).dtype != DataType::kBool &&
      !is_bitwise_or_logical(op)) {
    const auto x = static_cast<std::int64_t>(*ca);
    const auto y = static_cast<std::int64_t>(*cb);
    std::optional<std::int64_t> r;
    switch (op) {
      case BinaryOp::kAdd:
        r = x + y;
        break;
      case BinaryOp::kSub:
        r = x - y;
        break;
      case BinaryOp::kMul:
        r = x * y;
        break;
      case BinaryOp::kFloorDiv:
        if (y != 0) r = x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0);
        break;
      case BinaryOp::kMaximum:
        r = std::max(x, y);
        break;
      case BinaryOp::kMinimum:
        r = std::min(x, y);
        break;
      default:
        break;
    }
    if (r) {
      return Value::from_id(t.constant(static_cast<long double>(*r), t.type_of(ia).dtype,
                                       t.is_weak(ia) && t.is_weak(ib), to_loc(loc)));
    }
  }
  Op o = make_op(OpKind::kBinary, loc);
  o.attrs = BinaryAttrs{op};
  o.operands = {ia, ib};
  return Value::from_id(t.append1(std::move(o)));
}

Value unary(UnaryOp op, const Operand& x, Loc loc) {
  const char* construct = name_of(op);
  Tracer& t = Tracer::current(construct, loc);
  need_value(t, x, construct);
  int id = x.value.id();
  if (op == UnaryOp::kLogicalNot && t.type_of(id).dtype != DataType::kBool) {
    id = binary(BinaryOp::kEq, x, 0, loc).id();
    return Value::from_id(id);
  }
  Op o = make_op(OpKind::kUnary, loc);
  o.attrs = UnaryAttrs{op};
  o.operands = {id};
  return Value::from_id(t.append1(std::move(o)));
}

#define TILEOPS_TL_BINARY_OPERATOR(sym, op) \
  Value operator sym(const Operand& a, const Operand& b) { return binary(op, a, b, a.loc); }
TILEOPS_TL_BINARY_OPERATOR(+, BinaryOp::kAdd)
TILEOPS_TL_BINARY_OPERATOR(-, BinaryOp::kSub)
TILEOPS_TL_BINARY_OPERATOR(*, BinaryOp::kMul)
TILEOPS_TL_BINARY_OPERATOR(/, BinaryOp::kDiv)
TILEOPS_TL_BINARY_OPERATOR(%, BinaryOp::kMod)
TILEOPS_TL_BINARY_OPERATOR(==, BinaryOp::kEq)
TILEOPS_TL_BINARY_OPERATOR(!=, BinaryOp::kNe)
TILEOPS_TL_BINARY_OPERATOR(<, BinaryOp::kLt)
TILEOPS_TL_BINARY_OPERATOR(<=, BinaryOp::kLe)
TILEOPS_TL_BINARY_OPERATOR(>, BinaryOp::kGt)
TILEOPS_TL_BINARY_OPERATOR(>=, BinaryOp::kGe)
TILEOPS_TL_BINARY_OPERATOR(&, BinaryOp::kBitAnd)
TILEOPS_TL_BINARY_OPERATOR(|, BinaryOp::kBitOr)
TILEOPS_TL_BINARY_OPERATOR(^, BinaryOp::kBitXor)
TILEOPS_TL_BINARY_OPERATOR(<<, BinaryOp::kShl)
TILEOPS_TL_BINARY_OPERATOR(>>, BinaryOp::kShr)
#undef TILEOPS_TL_BINARY_OPERATOR

Value operator-(const Operand& x) { return unary(UnaryOp::kNegative, x, x.loc); }
Value operator~(const Operand& x) { return unary(UnaryOp::kBitNot, x, x.loc); }
Value operator!(const Operand& x) { return unary(UnaryOp::kLogicalNot, x, x.loc); }

Value floordiv(const Operand& a, const Operand& b, Loc loc) {
  return binary(BinaryOp::kFloorDiv, a, b, loc);
}
Value maximum(const Operand& a, const Operand& b, Loc loc) {
  return binary(BinaryOp::kMaximum, a, b, loc);
}
Value minimum(const Operand& a, const Operand& b, Loc loc) {
  return binary(BinaryOp::kMinimum, a, b, loc);
}
Value pow(const Operand& a, const Operand& b, Loc loc) { return binary(BinaryOp::kPow, a, b, loc); }
Value logical_and(const Operand& a, const Operand& b, Loc loc) {
  return binary(BinaryOp::kLogicalAnd, a, b, loc);
}
Value logical_or(const Operand& a, const Operand& b, Loc loc) {
  return binary(BinaryOp::kLogicalOr, a, b, loc);
}
Value logical_not(const Operand& x, Loc loc) { return unary(UnaryOp::kLogicalNot, x, loc); }

Value where(const Operand& cond, const Operand& a, const Operand& b, Loc loc) {
  Tracer& t = Tracer::current("where", loc);
  need_value(t, cond, "where");
  auto [ia, ib] = promote(t, a, b, loc);
  Op o = make_op(OpKind::kWhere, loc);
  o.operands = {cond.value.id(), ia, ib};
  return Value::from_id(t.append1(std::move(o)));
}

#define TILEOPS_TL_UNARY(name, op) \
  Value name(const Operand& x, Loc loc) { return unary(op, x, loc); }
TILEOPS_TL_UNARY(abs, UnaryOp::kAbs)
TILEOPS_TL_UNARY(ceil, UnaryOp::kCeil)
TILEOPS_TL_UNARY(floor, UnaryOp::kFloor)
TILEOPS_TL_UNARY(round, UnaryOp::kRound)
TILEOPS_TL_UNARY(trunc, UnaryOp::kTrunc)
TILEOPS_TL_UNARY(exp, UnaryOp::kExp)
TILEOPS_TL_UNARY(exp2, UnaryOp::kExp2)
TILEOPS_TL_UNARY(expm1, UnaryOp::kExpm1)
TILEOPS_TL_UNARY(log, UnaryOp::kLog)
TILEOPS_TL_UNARY(log2, UnaryOp::kLog2)
TILEOPS_TL_UNARY(log1p, UnaryOp::kLog1p)
TILEOPS_TL_UNARY(sqrt, UnaryOp::kSqrt)
TILEOPS_TL_UNARY(rsqrt, UnaryOp::kRsqrt)
TILEOPS_TL_UNARY(sin, UnaryOp::kSin)
TILEOPS_TL_UNARY(cos, UnaryOp::kCos)
TILEOPS_TL_UNARY(tan, UnaryOp::kTan)
TILEOPS_TL_UNARY(sinh, UnaryOp::kSinh)
TILEOPS_TL_UNARY(cosh, UnaryOp::kCosh)
TILEOPS_TL_UNARY(tanh, UnaryOp::kTanh)
TILEOPS_TL_UNARY(erf, UnaryOp::kErf)
TILEOPS_TL_UNARY(sigmoid, UnaryOp::kSigmoid)
TILEOPS_TL_UNARY(relu, UnaryOp::kRelu)
TILEOPS_TL_UNARY(silu, UnaryOp::kSilu)
TILEOPS_TL_UNARY(softplus, UnaryOp::kSoftplus)
TILEOPS_TL_UNARY(negative, UnaryOp::kNegative)
TILEOPS_TL_UNARY(reciprocal, UnaryOp::kReciprocal)
TILEOPS_TL_UNARY(isnan, UnaryOp::kIsnan)
TILEOPS_TL_UNARY(isinf, UnaryOp::kIsinf)
#undef TILEOPS_TL_UNARY

Value gelu(const Operand& x, bool approximate, Loc loc) {
  return unary(approximate ? UnaryOp::kGeluTanh : UnaryOp::kGeluErf, x, loc);
}

Value Value::to(DataType dtype, RoundMode mode, Loc loc) const {
  Tracer& t = Tracer::current("to", loc);
  if (dtype == this->dtype() && mode == RoundMode::kRint) return *this;
  Op o = make_op(OpKind::kCast, loc);
  o.attrs = CastAttrs{.dtype = dtype, .round = mode};
  o.operands = {id_};
  return from_id(t.append1(std::move(o)));
}

Value Value::bitcast(DataType dtype, Loc loc) const {
  Tracer& t = Tracer::current("bitcast", loc);
  need_value(t, Operand(*this, loc), "bitcast");
  if (dtype == this->dtype() && bitcast_compatible(dtype, dtype)) return *this;
  Op o = make_op(OpKind::kCast, loc);
  o.attrs = CastAttrs{.dtype = dtype, .bitcast = true};
  o.operands = {id_};
  return from_id(t.append1(std::move(o)));
}

}  // namespace tileops::tl
