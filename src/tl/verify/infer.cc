// Type inference and operand checks of every op kind (see infer.h).
#include "src/tl/verify/infer.h"

#include <algorithm>

#include "src/tl/verify/checker.h"
#include "tileops/core/checked_size.h"

namespace tileops::tl {
namespace detail {

Type tile_or_scalar(DataType dtype, std::vector<std::int64_t> shape) {
  if (shape.empty()) return Type{TypeKind::kScalar, dtype, {}};
  return Type{TypeKind::kTile, dtype, std::move(shape)};
}

namespace {

bool is_comparison(BinaryOp op) { return op >= BinaryOp::kEq && op <= BinaryOp::kGe; }

}  // namespace

std::vector<Type> Checker::elementwise() const {
  if (op_.kind == OpKind::kUnary) {
    need_operands(1);
    need_value(0, "operand");
    const Type& x = operand(0);
    const UnaryOp u = op_.as<UnaryAttrs>().op;
    if (u == UnaryOp::kIsnan || u == UnaryOp::kIsinf) {
      need_float(x, "operand");
      return {tile_or_scalar(DataType::kBool, x.shape)};
    }
    if (u == UnaryOp::kLogicalNot) return {tile_or_scalar(DataType::kBool, x.shape)};
    if (u == UnaryOp::kBitNot) {
      if (is_floating(x.dtype))
        fail("needs an integer or bool dtype, got " + type_name(x.dtype), ErrorKind::kInvalidType);
      return {x};
    }
    if (u != UnaryOp::kAbs && u != UnaryOp::kNegative && u != UnaryOp::kRelu)
      need_float(x, "operand");
    return {x};
  }
  if (op_.kind == OpKind::kWhere) {
    need_operands(3);
    for (std::size_t i = 0; i < 3; ++i) need_value(i, "operand");
    if (operand(0).dtype != DataType::kBool) {
      fail("condition must be bool, got " + type_name(operand(0).dtype), ErrorKind::kInvalidType);
    }
    if (operand(1).dtype != operand(2).dtype) {
      fail("dtype mismatch: " + type_name(operand(1).dtype) + " and " + type_name(operand(2).dtype),
           ErrorKind::kInvalidType);
    }
    auto shape = broadcast_shapes(operand(0).shape, operand(1).shape, op_);
    shape = broadcast_shapes(shape, operand(2).shape, op_);
    return {tile_or_scalar(operand(1).dtype, shape)};
  }
  // Binary.
  need_operands(2);
  need_value(0, "left operand");
  need_value(1, "right operand");
  const Type& a = operand(0);
  const Type& b = operand(1);
  if (a.dtype != b.dtype) {
    fail("dtype mismatch: " + type_name(a.dtype) + " and " + type_name(b.dtype),
         ErrorKind::kInvalidType);
  }
  const BinaryOp bop = op_.as<BinaryAttrs>().op;
  const bool bitwise = bop >= BinaryOp::kBitAnd && bop <= BinaryOp::kShr;
  if (bitwise && is_floating(a.dtype)) {
    fail("needs integer or bool operands, got " + type_name(a.dtype), ErrorKind::kInvalidType);
  }
  if ((bop == BinaryOp::kDiv || bop == BinaryOp::kPow) && !is_floating(a.dtype)) {
    need_float(a, "operand");
  }
  auto shape = broadcast_shapes(a.shape, b.shape, op_);
  const bool logical = bop == BinaryOp::kLogicalAnd || bop == BinaryOp::kLogicalOr;
  return {tile_or_scalar(is_comparison(bop) || logical ? DataType::kBool : a.dtype, shape)};
}

std::vector<Type> Checker::memory() const {
  switch (op_.kind) {
    case OpKind::kTensor: {
      const Type& p = operand(0);
      if (p.kind != TypeKind::kPointer)
        fail("first operand must be a GlobalAddress, got " + p.to_string());
      const TensorAttrs& a = op_.as<TensorAttrs>();
      if (a.rank < 1 || a.rank > 8) fail("rank must be 1..8, got " + std::to_string(a.rank));
      const auto rank = static_cast<std::size_t>(a.rank);
      need_operands(1 + rank * (a.has_strides ? 2 : 1));
      for (std::size_t i = 1; i < op_.operands.size(); ++i) need_int_scalar(i, "extent or stride");
      return {Type{TypeKind::kTensor, p.dtype, std::vector<std::int64_t>(rank, -1)}};
    }
    case OpKind::kTensorDim:
      if (operand(0).kind != TypeKind::kTensor) fail("needs a global tensor");
      axis(op_.as<AxisAttrs>().axis, operand(0).shape.size());
      return {Type{TypeKind::kScalar, DataType::kInt64, {}}};
    case OpKind::kLoad:
    case OpKind::kPrefetch: {  // a load also has the pad value
      const bool load = op_.kind == OpKind::kLoad;
      const Extents& shape = load ? op_.as<LoadAttrs>().shape : op_.as<ShapeAttrs>().shape;
      access(0, 1);
      const Type& t = operand(0);
      need_operands((load ? 2 : 1) + t.shape.size());
      need_static(shape, "tile shape");
      check_tile_size(shape, t.dtype);  // a prefetch has no result to check
      if (shape.size() != t.shape.size()) {
        fail("tile rank " + std::to_string(shape.size()) + " differs from tensor rank " +
             std::to_string(t.shape.size()));
      }
      if (!load) return {};
      if (operand(op_.operands.size() - 1).dtype != t.dtype)
        fail("pad value dtype differs", ErrorKind::kInternal);
      return {Type{TypeKind::kTile, t.dtype, shape}};
    }
    case OpKind::kStore:
    case OpKind::kAtomic: {
      need_value(0, "stored value");
      access(1, 2);
      const Type& v = operand(0);
      const Type& t = operand(1);
      const bool masked =
          op_.kind == OpKind::kAtomic ? op_.as<AtomicAttrs>().masked : op_.as<StoreAttrs>().masked;
      need_operands(2 + t.shape.size() + (masked ? 1 : 0));
      if (masked) need_int_scalar(op_.operands.size() - 1, "mask count");
      if (v.dtype != t.dtype) {
        fail("dtype mismatch: storing " + type_name(v.dtype) + " into a " + type_name(t.dtype) +
                 " tensor (cast with .to())",
             ErrorKind::kInvalidType);
      }
      if (v.kind == TypeKind::kTile && v.shape.size() != t.shape.size()) {
        fail("shape mismatch: tile " + shape_string(v.shape) + " has rank " +
             std::to_string(v.shape.size()) + ", tensor rank " + std::to_string(t.shape.size()));
      }
      if (op_.kind == OpKind::kAtomic && v.dtype == DataType::kBool)
        fail("needs a numeric dtype", ErrorKind::kInvalidType);
      return {};
    }
    case OpKind::kFull: {
      const FillAttrs& a = op_.as<FillAttrs>();
      need_static(a.shape, "shape");
      if (operand(0).kind != TypeKind::kScalar) fail("fill value must be a scalar");
      return {Type{TypeKind::kTile, a.dtype, a.shape}};
    }
    case OpKind::kArange: {
      const FillAttrs& a = op_.as<FillAttrs>();
      need_static(a.shape, "length");
      return {Type{TypeKind::kTile, a.dtype, a.shape}};
    }
    default:
      break;
  }
  fail("not a memory op", ErrorKind::kInternal);
}

void Checker::check_tile_size(const std::vector<std::int64_t>& shape, DataType dtype) const {
  const std::string what = "tile shape " + shape_string(shape) + " of " + type_name(dtype);
  try {
    checked_bytes(checked_product(shape, what), std::max(kHeldBytes, size_of(dtype)), what);
  } catch (const Error& e) {
    fail(e.what());
  }
}

std::vector<Type> Checker::infer() const {
  std::vector<Type> types = infer_unchecked();
  for (const Type& t : types) {
    if (t.kind == TypeKind::kTile) check_tile_size(t.shape, t.dtype);
  }
  return types;
}

std::vector<Type> Checker::infer_unchecked() const {
  // Every reader below takes the attributes by name; a hand-built op may hold another kind's.
  if (!attrs_match(op_.kind, op_.attrs)) {
    fail("holds the attributes of another kind of op", ErrorKind::kInternal);
  }
  switch (op_.kind) {
    case OpKind::kConstant:
      return {Type{TypeKind::kScalar, op_.as<ConstantAttrs>().dtype, {}}};
    case OpKind::kBlockIdx:
    case OpKind::kBlockNum:
      return {Type{TypeKind::kScalar, DataType::kInt64, {}}};
    case OpKind::kTensor:
    case OpKind::kTensorDim:
    case OpKind::kLoad:
    case OpKind::kStore:
    case OpKind::kAtomic:
    case OpKind::kPrefetch:
    case OpKind::kFull:
    case OpKind::kArange:
      return memory();
    case OpKind::kUnary:
    case OpKind::kBinary:
    case OpKind::kWhere:
      return elementwise();
    case OpKind::kCast: {
      const CastAttrs& a = op_.as<CastAttrs>();
      need_value(0, "operand");
      if (a.bitcast && !bitcast_compatible(operand(0).dtype, a.dtype)) {
        fail("dtype: needs a dtype of the same size as " + type_name(operand(0).dtype) +
                 " (bool excluded), got " + type_name(a.dtype),
             ErrorKind::kInvalidType);
      }
      return {tile_or_scalar(a.dtype, operand(0).shape)};
    }
    case OpKind::kReduce:
    case OpKind::kCumsum:
    case OpKind::kSort:
      return reduce();
    case OpKind::kReshape:
    case OpKind::kBroadcast:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kConcat:
    case OpKind::kMatmul:
      return reshaping();
    case OpKind::kFor:
    case OpKind::kIf:
      return control();
  }
  fail("unknown op kind", ErrorKind::kInternal);
}

}  // namespace detail

void trace_error(ErrorKind kind, const SourceLoc& loc, std::string_view construct,
                 const std::string& message) {
  throw Error(kind, "tl: " + (loc.line ? loc.to_string() : std::string("<unknown>")) + ": '" +
                        std::string(construct) + "': " + message);
}

std::string construct_name(const Op& op) {
  switch (op.kind) {  // the user-facing construct where it differs from the IR name
    case OpKind::kFor:
      return "range";
    case OpKind::kIf:
      return "if_";
    case OpKind::kSlice:
      return "copy";
    case OpKind::kBroadcast:
      return "broadcast_to";
    case OpKind::kConstant:
      return "constant";
    case OpKind::kCast:
      return std::holds_alternative<CastAttrs>(op.attrs) && std::get<CastAttrs>(op.attrs).bitcast
                 ? "bitcast"
                 : "to";
    default:
      return name_of(op);
  }
}

bool bitcast_compatible(DataType from, DataType to) {
  return from != DataType::kBool && to != DataType::kBool && size_of(from) == size_of(to);
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<std::int64_t> broadcast_shapes(const std::vector<std::int64_t>& a,
                                           const std::vector<std::int64_t>& b, const Op& op) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      trace_error(
          ErrorKind::kInvalidArgument, op.loc, construct_name(op),
          "shape mismatch: " + shape_string(a) + " and " + shape_string(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<Type> infer_result_types(const Function& function, const Op& op) {
  return detail::Checker(function, op).infer();
}

}  // namespace tileops::tl
