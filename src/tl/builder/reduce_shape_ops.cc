// Builder: reductions, cumsum and shape operations (reshape, broadcast, transpose, sub-tiles).
#include "src/tl/builder/tracer.h"
#include "tileops/tl/ops.h"

namespace tileops::tl {
namespace {

Value one_input(OpKind kind, const Value& x, OpAttrs attrs, const char* construct, const Loc& loc) {
  Tracer& t = Tracer::current(construct, loc);
  Op op = make_op(kind, loc);
  op.attrs = std::move(attrs);
  op.operands = {x.id()};
  return Value::from_id(t.append1(std::move(op)));
}

int wrap_axis(const Value& x, int axis, const char* construct, const Loc& loc) {
  const int rank = static_cast<int>(x.shape().size());
  if (axis < -rank || axis >= rank) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), construct,
                "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

Value reduce(ReduceOp r, const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  Tracer& t = Tracer::current(name_of(r), loc);
  Op op = make_op(OpKind::kReduce, loc);
  op.attrs = ReduceAttrs{.op = r, .dims = {dims.begin(), dims.end()}, .keep_dims = keep_dims};
  op.operands = {x.id()};
  if ((r == ReduceOp::kAll || r == ReduceOp::kAny) && x.valid() && x.is_tile() &&
      x.dtype() != DataType::kBool) {
    op.operands = {(x != 0).id()};
  }
  return Value::from_id(t.append1(std::move(op)));
}

Value reduce_sum(const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kSum, x, dims, keep_dims, loc);
}
Value reduce_max(const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kMax, x, dims, keep_dims, loc);
}
Value reduce_min(const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kMin, x, dims, keep_dims, loc);
}
Value reduce_prod(const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kProd, x, dims, keep_dims, loc);
}
Value reduce_mean(const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kMean, x, dims, keep_dims, loc);
}
Value argmax(const Value& x, int dim, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kArgmax, x, {dim}, keep_dims, loc);
}
Value argmin(const Value& x, int dim, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kArgmin, x, {dim}, keep_dims, loc);
}
Value all(const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kAll, x, dims, keep_dims, loc);
}
Value any(const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc) {
  return reduce(ReduceOp::kAny, x, dims, keep_dims, loc);
}

Value cumsum(const Value& x, int axis, Loc loc) {
  return one_input(OpKind::kCumsum, x, AxisAttrs{.axis = axis}, "cumsum", loc);
}

namespace {

Value sort_op(const Value& x, int axis, std::int64_t k, bool descending, bool indices,
              const char* construct, const Loc& loc) {
  const int a = wrap_axis(x, axis, construct, loc);
  // k = 0: every element of the line (sort, argsort).
  const std::int64_t kept = k == 0 ? x.shape()[static_cast<std::size_t>(a)] : k;
  return one_input(OpKind::kSort, x,
                   SortAttrs{.axis = a, .k = kept, .descending = descending, .indices = indices},
                   construct, loc);
}

}  // namespace

Value sort(const Value& x, int axis, bool descending, Loc loc) {
  return sort_op(x, axis, 0, descending, false, "sort", loc);
}

Value argsort(const Value& x, int axis, bool descending, Loc loc) {
  return sort_op(x, axis, 0, descending, true, "argsort", loc);
}

std::pair<Value, Value> topk(const Value& x, std::int64_t k, int axis, bool largest, Loc loc) {
  const int a = wrap_axis(x, axis, "topk", loc);
  const std::int64_t extent = x.shape()[static_cast<std::size_t>(a)];
  if (k < 1 || k > extent) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "topk",
                "k must be in [1, " + std::to_string(extent) + "] (the extent of axis " +
                    std::to_string(axis) + "), got " + std::to_string(k));
  }
  return {sort_op(x, axis, k, largest, false, "topk", loc),
          sort_op(x, axis, k, largest, true, "topk", loc)};
}

Value reshape(const Value& x, const Shape& shape, Loc loc) {
  Tracer& t = Tracer::current("reshape", loc);
  return one_input(OpKind::kReshape, x, ShapeAttrs{static_shape(t, shape, "reshape")}, "reshape",
                   loc);
}

Value ravel(const Value& x, Loc loc) {
  return one_input(OpKind::kReshape, x, ShapeAttrs{{x.size()}}, "ravel", loc);
}

Value expand_dims(const Value& x, int axis, Loc loc) {
  std::vector<std::int64_t> shape = x.shape();
  const int rank = static_cast<int>(shape.size()) + 1;
  if (axis < -rank || axis >= rank) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "expand_dims",
                "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  shape.insert(shape.begin() + (axis < 0 ? axis + rank : axis), 1);
  return one_input(OpKind::kReshape, x, ShapeAttrs{shape}, "expand_dims", loc);
}

Value squeeze(const Value& x, int axis, Loc loc) {
  std::vector<std::int64_t> shape = x.shape();
  const int a = wrap_axis(x, axis, "squeeze", loc);
  if (shape[a] != 1 || shape.size() == 1) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "squeeze",
                "dim " + std::to_string(axis) + " of " + shape_string(shape) +
                    " must have extent 1 (and the result rank >= 1)");
  }
  shape.erase(shape.begin() + a);
  return one_input(OpKind::kReshape, x, ShapeAttrs{shape}, "squeeze", loc);
}

Value broadcast_to(const Value& x, const Shape& shape, Loc loc) {
  Tracer& t = Tracer::current("broadcast_to", loc);
  std::vector<std::int64_t> s = static_shape(t, shape, "broadcast_to");
  if (x.is_scalar()) {
    Op op = make_op(OpKind::kFull, loc);
    op.attrs = FillAttrs{.shape = s, .dtype = x.dtype()};
    op.operands = {x.id()};
    return Value::from_id(t.append1(std::move(op)));
  }
  return one_input(OpKind::kBroadcast, x, ShapeAttrs{s}, "broadcast_to", loc);
}

Value transpose(const Value& x, const std::vector<int>& permutation, Loc loc) {
  std::vector<std::int64_t> perm(permutation.begin(), permutation.end());
  if (perm.empty()) {
    for (int i = static_cast<int>(x.shape().size()) - 1; i >= 0; --i) perm.push_back(i);
  }
  return one_input(OpKind::kTranspose, x, TransposeAttrs{perm}, "transpose", loc);
}

Value Value::T(Loc loc) const {  // NOLINT(readability-identifier-naming)
  return transpose(*this, {}, loc);
}

Value copy(const Value& tile, const Shape& shape, const Shape& offsets, Loc loc) {
  Tracer& t = Tracer::current("copy", loc);
  Op op = make_op(OpKind::kSlice, loc);
  op.attrs = SliceAttrs{.offsets = static_shape(t, offsets, "copy"),
                        .shape = static_shape(t, shape, "copy")};
  op.operands = {tile.id()};
  return Value::from_id(t.append1(std::move(op)));
}

Value concat(const std::vector<Value>& tiles, int axis, Loc loc) {
  Tracer& t = Tracer::current("concat", loc);
  Op op = make_op(OpKind::kConcat, loc);
  op.attrs = AxisAttrs{.axis = axis};
  for (const Value& v : tiles) op.operands.push_back(v.id());
  return Value::from_id(t.append1(std::move(op)));
}

}  // namespace tileops::tl
