// Type inference and operand checks of every op kind (see infer.h).
#include "src/tl/verify/infer.h"

#include <algorithm>

namespace tileops::tl {
namespace {

std::string type_name(DataType dtype) { return std::string(name_of(dtype)); }

class Checker {
 public:
  Checker(const Function& f, const Op& op) : f_(f), op_(op), name_(construct_name(op)) {}

  [[noreturn]] void fail(const std::string& message,
                         ErrorKind kind = ErrorKind::kInvalidArgument) const {
    trace_error(kind, op_.loc, name_, message);
  }
  const Type& operand(std::size_t i) const {
    if (i >= op_.operands.size())
      fail("missing operand " + std::to_string(i), ErrorKind::kInternal);
    return f_.type_of(op_.operands[i]);
  }
  void need_operands(std::size_t n) const {
    if (op_.operands.size() != n) {
      fail("expected " + std::to_string(n) + " operands, got " +
           std::to_string(op_.operands.size()));
    }
  }
  void need_value(std::size_t i, const char* what) const {
    const Type& t = operand(i);
    if (t.kind != TypeKind::kTile && t.kind != TypeKind::kScalar) {
      fail(std::string(what) + " must be a tile or scalar, got " + t.to_string());
    }
  }
  void need_int_scalar(std::size_t i, const char* what) const {
    const Type& t = operand(i);
    if (t.kind != TypeKind::kScalar || !is_integral(t.dtype)) {
      fail(std::string(what) + " must be an integer scalar, got " + t.to_string(),
           ErrorKind::kInvalidType);
    }
  }
  void need_tile(std::size_t i, const char* what) const {
    if (operand(i).kind != TypeKind::kTile) {
      fail(std::string(what) + " must be a tile, got " + operand(i).to_string());
    }
  }
  void need_float(const Type& t, const char* what) const {
    if (!is_floating(t.dtype)) {
      fail(std::string(what) + " needs a float dtype, got " + type_name(t.dtype),
           ErrorKind::kInvalidType);
    }
  }
  void need_static(const std::vector<std::int64_t>& shape, const char* what) const {
    if (shape.empty()) fail(std::string(what) + " must have at least one dim");
    for (std::int64_t d : shape) {
      if (d <= 0) fail(std::string(what) + " must be positive, got " + shape_string(shape));
    }
  }
  int axis(std::int64_t a, std::size_t rank) const {
    const auto r = static_cast<std::int64_t>(rank);
    if (a < -r || a >= r) {
      fail("axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    }
    return static_cast<int>(a < 0 ? a + r : a);
  }
  // Tensor access (load/store/atomic): tensor, offsets (rank of tensor).
  void access(std::size_t tensor_index, std::size_t first_offset) const {
    const Type& t = operand(tensor_index);
    if (t.kind != TypeKind::kTensor) fail("target must be a global tensor, got " + t.to_string());
    for (std::size_t i = 0; i < t.shape.size(); ++i) need_int_scalar(first_offset + i, "offset");
  }

  std::vector<Type> infer() const;

 private:
  std::vector<Type> elementwise() const;
  std::vector<Type> memory() const;
  std::vector<Type> reshaping() const;
  std::vector<Type> control() const;
  std::vector<Type> reduce() const;

  const Function& f_;
  const Op& op_;
  std::string name_;
};

Type tile_or_scalar(DataType dtype, std::vector<std::int64_t> shape) {
  if (shape.empty()) return Type{TypeKind::kScalar, dtype, {}};
  return Type{TypeKind::kTile, dtype, std::move(shape)};
}

bool is_comparison(BinaryOp op) { return op >= BinaryOp::kEq && op <= BinaryOp::kGe; }

std::vector<Type> Checker::elementwise() const {
  if (op_.kind == OpKind::kUnary) {
    need_operands(1);
    need_value(0, "operand");
    const Type& x = operand(0);
    const auto u = static_cast<UnaryOp>(op_.sub);
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
  const auto bop = static_cast<BinaryOp>(op_.sub);
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
      const std::size_t rank = op_.ints.at(0);
      if (rank == 0 || rank > 8) fail("rank must be 1..8, got " + std::to_string(rank));
      need_operands(1 + rank * (op_.flag ? 2 : 1));
      for (std::size_t i = 1; i < op_.operands.size(); ++i) need_int_scalar(i, "extent or stride");
      return {Type{TypeKind::kTensor, p.dtype, std::vector<std::int64_t>(rank, -1)}};
    }
    case OpKind::kTensorDim:
      if (operand(0).kind != TypeKind::kTensor) fail("needs a global tensor");
      axis(op_.ints.at(0), operand(0).shape.size());
      return {Type{TypeKind::kScalar, DataType::kInt64, {}}};
    case OpKind::kLoad: {
      access(0, 1);
      const Type& t = operand(0);
      need_operands(2 + t.shape.size());
      need_static(op_.ints, "tile shape");
      if (op_.ints.size() != t.shape.size()) {
        fail("tile rank " + std::to_string(op_.ints.size()) + " differs from tensor rank " +
             std::to_string(t.shape.size()));
      }
      if (operand(op_.operands.size() - 1).dtype != t.dtype)
        fail("pad value dtype differs", ErrorKind::kInternal);
      return {Type{TypeKind::kTile, t.dtype, op_.ints}};
    }
    case OpKind::kStore:
    case OpKind::kAtomic: {
      need_value(0, "stored value");
      access(1, 2);
      const Type& v = operand(0);
      const Type& t = operand(1);
      need_operands(2 + t.shape.size() + (op_.flag ? 1 : 0));
      if (op_.flag) need_int_scalar(op_.operands.size() - 1, "mask count");
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
    case OpKind::kFull:
      need_static(op_.ints, "shape");
      if (operand(0).kind != TypeKind::kScalar) fail("fill value must be a scalar");
      return {Type{TypeKind::kTile, op_.dtype, op_.ints}};
    case OpKind::kArange:
      need_static(op_.ints, "length");
      return {Type{TypeKind::kTile, op_.dtype, op_.ints}};
    default:
      break;
  }
  fail("not a memory op", ErrorKind::kInternal);
}

std::vector<Type> Checker::infer() const {
  switch (op_.kind) {
    case OpKind::kConstant:
      return {Type{TypeKind::kScalar, op_.dtype, {}}};
    case OpKind::kBlockIdx:
    case OpKind::kBlockNum:
      return {Type{TypeKind::kScalar, DataType::kInt64, {}}};
    case OpKind::kTensor:
    case OpKind::kTensorDim:
    case OpKind::kLoad:
    case OpKind::kStore:
    case OpKind::kAtomic:
    case OpKind::kFull:
    case OpKind::kArange:
      return memory();
    case OpKind::kUnary:
    case OpKind::kBinary:
    case OpKind::kWhere:
      return elementwise();
    case OpKind::kCast:
      need_value(0, "operand");
      return {tile_or_scalar(op_.dtype, operand(0).shape)};
    case OpKind::kReduce:
    case OpKind::kCumsum:
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

std::vector<Type> Checker::reduce() const {
  need_tile(0, "operand");
  const Type& x = operand(0);
  if (op_.kind == OpKind::kCumsum) {
    axis(op_.ints.at(0), x.shape.size());
    return {x};
  }
  std::vector<bool> reduced(x.shape.size(), op_.ints.empty());
  for (std::int64_t d : op_.ints) {
    const int a = axis(d, x.shape.size());
    if (reduced[a]) fail("dim " + std::to_string(d) + " given twice");
    reduced[a] = true;
  }
  const auto r = static_cast<ReduceOp>(op_.sub);
  DataType dtype = x.dtype;
  if (r == ReduceOp::kMean) need_float(x, "operand");
  if (r == ReduceOp::kArgmax || r == ReduceOp::kArgmin) dtype = DataType::kInt32;
  if (r == ReduceOp::kAll || r == ReduceOp::kAny) dtype = DataType::kBool;
  std::vector<std::int64_t> shape;
  for (std::size_t i = 0; i < x.shape.size(); ++i) {
    if (!reduced[i])
      shape.push_back(x.shape[i]);
    else if (op_.flag)
      shape.push_back(1);
  }
  return {tile_or_scalar(dtype, shape)};
}

std::vector<Type> Checker::reshaping() const {
  if (op_.kind == OpKind::kConcat) {
    if (op_.operands.empty()) fail("needs at least one tile");
    const Type& first = operand(0);
    need_tile(0, "operand");
    const int a = axis(op_.ints.at(0), first.shape.size());
    std::vector<std::int64_t> shape = first.shape;
    shape[a] = 0;
    for (std::size_t i = 0; i < op_.operands.size(); ++i) {
      need_tile(i, "operand");
      const Type& t = operand(i);
      if (t.dtype != first.dtype)
        fail("dtype mismatch: " + type_name(first.dtype) + " and " + type_name(t.dtype),
             ErrorKind::kInvalidType);
      bool ok = t.shape.size() == first.shape.size();
      for (std::size_t d = 0; ok && d < t.shape.size(); ++d)
        ok = static_cast<int>(d) == a || t.shape[d] == first.shape[d];
      if (!ok)
        fail("shape mismatch: " + shape_string(first.shape) + " and " + shape_string(t.shape));
      shape[a] += t.shape[a];
    }
    return {Type{TypeKind::kTile, first.dtype, shape}};
  }
  if (op_.kind == OpKind::kMatmul) {
    need_tile(0, "a");
    need_tile(1, "b");
    const Type& a = operand(0);
    const Type& b = operand(1);
    if (a.shape.size() != 2 || b.shape.size() != 2)
      fail("needs 2-D tiles, got " + shape_string(a.shape) + " and " + shape_string(b.shape));
    if (a.shape[1] != b.shape[0])
      fail("shape mismatch: " + shape_string(a.shape) + " @ " + shape_string(b.shape));
    if (a.dtype != b.dtype)
      fail("dtype mismatch: " + type_name(a.dtype) + " and " + type_name(b.dtype),
           ErrorKind::kInvalidType);
    need_float(a, "a");
    std::vector<std::int64_t> out = {a.shape[0], b.shape[1]};
    if (op_.operands.size() == 3) {
      const Type& c = operand(2);
      if (c.dtype != DataType::kFloat32)
        fail((op_.flag ? "acc" : std::string("bias")) + " must be float32, got " +
                 type_name(c.dtype),
             ErrorKind::kInvalidType);
      if (op_.flag ? c.shape != out : broadcast_shapes(c.shape, out, op_) != out) {
        fail("shape mismatch: " + std::string(op_.flag ? "acc " : "bias ") + shape_string(c.shape) +
             " for a " + shape_string(out) + " product");
      }
    }
    return {Type{TypeKind::kTile, DataType::kFloat32, out}};
  }
  need_tile(0, "operand");
  const Type& x = operand(0);
  if (op_.kind == OpKind::kReshape) {
    need_static(op_.ints, "shape");
    Type t{TypeKind::kTile, x.dtype, op_.ints};
    if (t.size() != x.size())
      fail("cannot reshape " + shape_string(x.shape) + " to " + shape_string(op_.ints));
    return {t};
  }
  if (op_.kind == OpKind::kBroadcast) {
    need_static(op_.ints, "shape");
    if (broadcast_shapes(x.shape, op_.ints, op_) != op_.ints)
      fail("cannot broadcast " + shape_string(x.shape) + " to " + shape_string(op_.ints));
    return {Type{TypeKind::kTile, x.dtype, op_.ints}};
  }
  if (op_.kind == OpKind::kTranspose) {
    if (op_.ints.size() != x.shape.size())
      fail("permutation " + shape_string(op_.ints) + " for rank " + std::to_string(x.shape.size()));
    std::vector<bool> seen(x.shape.size(), false);
    std::vector<std::int64_t> shape;
    for (std::int64_t p : op_.ints) {
      const int a = axis(p, x.shape.size());
      if (seen[a]) fail("permutation " + shape_string(op_.ints) + " repeats a dim");
      seen[a] = true;
      shape.push_back(x.shape[a]);
    }
    return {Type{TypeKind::kTile, x.dtype, shape}};
  }
  // Slice.
  need_static(op_.ints2, "shape");
  if (op_.ints.size() != x.shape.size() || op_.ints2.size() != x.shape.size())
    fail("offsets and shape need rank " + std::to_string(x.shape.size()));
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (op_.ints[d] < 0 || op_.ints[d] + op_.ints2[d] > x.shape[d])
      fail("sub-tile " + shape_string(op_.ints2) + " at " + shape_string(op_.ints) + " exceeds " +
           shape_string(x.shape));
  }
  return {Type{TypeKind::kTile, x.dtype, op_.ints2}};
}

std::vector<Type> Checker::control() const {
  std::vector<Type> results;
  if (op_.kind == OpKind::kFor) {
    for (std::size_t i = 0; i < 3; ++i) need_int_scalar(i, "range bound");
    const Region& body = op_.regions.at(0);
    const std::size_t carried = op_.operands.size() - 3;
    if (body.args.size() != carried + 1 || body.yields.size() != carried)
      fail("malformed loop", ErrorKind::kInternal);
    if (op_.ints2.at(1) != 0 && carried > 0) {
      fail("parallel=true but the body carries a value from one iteration to the next (" +
           std::to_string(carried) + " loop-carried value(s), e.g. %" +
           std::to_string(body.args[1]) + ")");
    }
    for (std::size_t i = 0; i < carried; ++i) {
      const Type& init = operand(3 + i);
      const Type& next = f_.type_of(body.yields[i]);
      if (init != next)
        fail("loop-carried variable changes type from " + init.to_string() + " to " +
                 next.to_string(),
             ErrorKind::kInvalidType);
      results.push_back(init);
    }
    return results;
  }
  const Type& c = operand(0);
  if (c.kind != TypeKind::kScalar || c.dtype != DataType::kBool)
    fail("condition must be a bool scalar, got " + c.to_string(), ErrorKind::kInvalidType);
  const Region& a = op_.regions.at(0);
  const Region& b = op_.regions.at(1);
  if (a.yields.size() != b.yields.size()) fail("malformed branch", ErrorKind::kInternal);
  for (std::size_t i = 0; i < a.yields.size(); ++i) {
    const Type& ta = f_.type_of(a.yields[i]);
    const Type& tb = f_.type_of(b.yields[i]);
    if (ta != tb)
      fail("variable assigned " + ta.to_string() + " in one branch and " + tb.to_string() +
               " in the other",
           ErrorKind::kInvalidType);
    results.push_back(ta);
  }
  return results;
}

}  // namespace

void trace_error(ErrorKind kind, const SourceLoc& loc, std::string_view construct,
                 const std::string& message) {
  throw Error(kind, "tl: " + (loc.line ? loc.to_string() : std::string("<unknown>")) + ": '" +
                        std::string(construct) + "': " + message);
}

std::string construct_name(const Op& op) {
  switch (op.kind) {
    case OpKind::kUnary:
      return name_of(static_cast<UnaryOp>(op.sub));
    case OpKind::kBinary:
      return name_of(static_cast<BinaryOp>(op.sub));
    case OpKind::kReduce:
      return name_of(static_cast<ReduceOp>(op.sub));
    case OpKind::kAtomic:
      return name_of(static_cast<AtomicOp>(op.sub));
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
    default:
      return name_of(op.kind);
  }
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
  return Checker(function, op).infer();
}

}  // namespace tileops::tl
