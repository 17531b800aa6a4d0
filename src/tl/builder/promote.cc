// dtype promotion and operand conversion shared by the builder functions.
//
// Promotion (documented in docs/tile-language.md): a C++ number or a runtime scalar meeting a
// tile takes the tile's dtype (an int tile meeting a float number gives float32); otherwise
// float beats int, the wider type wins, float16 with bfloat16 gives float32, and mixed
// signedness of the same width widens (int8 with uint8 gives int16).
#include "src/tl/builder/tracer.h"

namespace tileops::tl {
namespace {

int rank_of(DataType d) {
  switch (d) {
    case DataType::kBool:
      return 0;
    case DataType::kInt8:
    case DataType::kUInt8:
      return 1;
    case DataType::kInt16:
      return 2;
    case DataType::kInt32:
      return 3;
    case DataType::kInt64:
      return 4;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
    case DataType::kHiFloat8:
      return 5;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 6;
    case DataType::kFloat32:
      return 7;
    case DataType::kFloat64:
      return 8;
  }
  return 0;
}

DataType promote_strong(DataType a, DataType b) {
  if (a == b) return a;
  const bool fa = is_floating(a);
  const bool fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  const int ra = rank_of(a);
  const int rb = rank_of(b);
  if (ra != rb) return ra > rb ? a : b;
  if (fa) return DataType::kFloat32;  // f16 vs bf16, or two 8-bit floats
  return DataType::kInt16;            // int8 vs uint8
}

DataType promote_weak(DataType strong, DataType weak) {
  if (is_floating(weak) && !is_floating(strong)) return DataType::kFloat32;
  if (strong == DataType::kBool && weak != DataType::kBool) return weak;
  return strong;
}

}  // namespace

Op make_op(OpKind kind, const Loc& loc) {
  Op op;
  op.kind = kind;
  op.attrs = default_attrs(kind);
  op.loc = to_loc(loc);
  return op;
}

int coerce(Tracer& t, int id, DataType dtype, const Loc& loc) {
  const Type& type = t.type_of(id);
  if (type.dtype == dtype) return id;
  if (const auto c = t.constant_value(id)) return t.constant(*c, dtype, false, to_loc(loc));
  Op op = make_op(OpKind::kCast, loc);
  op.attrs = CastAttrs{.dtype = dtype, .round = RoundMode::kRint};
  op.operands = {id};
  return t.append1(std::move(op));
}

std::pair<int, int> promote(Tracer& t, const Operand& a, const Operand& b, const Loc& loc) {
  const int ia = a.value.id();
  const int ib = b.value.id();
  const Type& ta = t.type_of(ia);
  const Type& tb = t.type_of(ib);
  // Numbers are weak; so is a runtime scalar meeting a tile (the tile's dtype wins).
  const bool wa = t.is_weak(ia) || (ta.kind == TypeKind::kScalar && tb.kind == TypeKind::kTile);
  const bool wb = t.is_weak(ib) || (tb.kind == TypeKind::kScalar && ta.kind == TypeKind::kTile);
  DataType target;
  if (wa && !wb) {
    target = promote_weak(tb.dtype, ta.dtype);
  } else if (wb && !wa) {
    target = promote_weak(ta.dtype, tb.dtype);
  } else {
    target = promote_strong(ta.dtype, tb.dtype);
  }
  return {coerce(t, ia, target, loc), coerce(t, ib, target, loc)};
}

std::int64_t static_int(Tracer& t, const Operand& v, const char* construct, const char* what) {
  const int id = v.value.id();
  const auto c = t.constant_value(id);
  if (!c) {
    trace_error(
        ErrorKind::kInvalidArgument, to_loc(v.loc), construct,
        std::string("non-static shape: ") + what +
            " must be a trace-time constant (a number or ConstExpr), got the runtime value %" +
            std::to_string(id) + " of type " + t.type_of(id).to_string());
  }
  if (is_floating(t.type_of(id).dtype)) {
    trace_error(ErrorKind::kInvalidType, to_loc(v.loc), construct,
                std::string(what) + " must be an integer, got a float");
  }
  return static_cast<std::int64_t>(*c);
}

std::vector<std::int64_t> static_shape(Tracer& t, const std::vector<Operand>& shape,
                                       const char* construct) {
  std::vector<std::int64_t> out;
  out.reserve(shape.size());
  for (const Operand& d : shape) out.push_back(static_int(t, d, construct, "tile extent"));
  return out;
}

int index_value(Tracer& t, const Operand& v, const char* construct) {
  const int id = v.value.id();
  const Type& type = t.type_of(id);
  if (type.kind != TypeKind::kScalar || !is_integral(type.dtype)) {
    trace_error(ErrorKind::kInvalidType, to_loc(v.loc), construct,
                "index must be an integer scalar, got " + type.to_string());
  }
  return coerce(t, id, DataType::kInt64, v.loc);
}

}  // namespace tileops::tl
