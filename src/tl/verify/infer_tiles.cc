// Checks and result types of reductions, data movement, matmul and control flow (checker.h).
#include <limits>

#include "src/tl/verify/checker.h"

namespace tileops::tl::detail {

std::vector<Type> Checker::reduce() const {
  need_tile(0, "operand");
  const Type& x = operand(0);
  if (op_.kind == OpKind::kCumsum) {
    axis(op_.as<AxisAttrs>().axis, x.shape.size());
    return {x};
  }
  if (op_.kind == OpKind::kSort) {
    const SortAttrs& sort = op_.as<SortAttrs>();
    const int a = axis(sort.axis, x.shape.size());
    if (x.dtype == DataType::kBool) fail("needs a number dtype, got bool", ErrorKind::kInvalidType);
    if (sort.k < 1 || sort.k > x.shape[a]) {
      fail("k must be in [1, " + std::to_string(x.shape[a]) + "] (the extent of axis " +
           std::to_string(sort.axis) + "), got " + std::to_string(sort.k));
    }
    if (x.shape[a] > std::numeric_limits<std::int32_t>::max()) {
      fail("axis " + std::to_string(sort.axis) + " is too long for int32 indices");
    }
    Type out = x;
    out.shape[a] = sort.k;
    if (sort.indices) out.dtype = DataType::kInt32;
    return {out};
  }
  const ReduceAttrs& attrs = op_.as<ReduceAttrs>();
  std::vector<bool> reduced(x.shape.size(), attrs.dims.empty());
  for (std::int64_t d : attrs.dims) {
    const int a = axis(d, x.shape.size());
    if (reduced[a]) fail("dim " + std::to_string(d) + " given twice");
    reduced[a] = true;
  }
  const ReduceOp r = attrs.op;
  DataType dtype = x.dtype;
  if (r == ReduceOp::kMean) need_float(x, "operand");
  if (r == ReduceOp::kArgmax || r == ReduceOp::kArgmin) dtype = DataType::kInt32;
  if (r == ReduceOp::kAll || r == ReduceOp::kAny) dtype = DataType::kBool;
  std::vector<std::int64_t> shape;
  for (std::size_t i = 0; i < x.shape.size(); ++i) {
    if (!reduced[i])
      shape.push_back(x.shape[i]);
    else if (attrs.keep_dims)
      shape.push_back(1);
  }
  return {tile_or_scalar(dtype, shape)};
}

std::vector<Type> Checker::reshaping() const {
  if (op_.kind == OpKind::kConcat) {
    if (op_.operands.empty()) fail("needs at least one tile");
    const Type& first = operand(0);
    need_tile(0, "operand");
    const int a = axis(op_.as<AxisAttrs>().axis, first.shape.size());
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
      if (__builtin_add_overflow(shape[a], t.shape[a], &shape[a]))
        fail("the concatenated extent along dim " + std::to_string(a) + " overflows int64");
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
      const bool acc = op_.as<MatmulAttrs>().accumulate;
      const Type& c = operand(2);
      if (c.dtype != DataType::kFloat32)
        fail((acc ? "acc" : std::string("bias")) + " must be float32, got " + type_name(c.dtype),
             ErrorKind::kInvalidType);
      if (acc ? c.shape != out : broadcast_shapes(c.shape, out, op_) != out) {
        fail("shape mismatch: " + std::string(acc ? "acc " : "bias ") + shape_string(c.shape) +
             " for a " + shape_string(out) + " product");
      }
    }
    return {Type{TypeKind::kTile, DataType::kFloat32, out}};
  }
  need_tile(0, "operand");
  const Type& x = operand(0);
  if (op_.kind == OpKind::kReshape) {
    const Extents& to = op_.as<ShapeAttrs>().shape;
    need_static(to, "shape");
    check_tile_size(to, x.dtype);  // before its size is formed
    Type t{TypeKind::kTile, x.dtype, to};
    if (t.size() != x.size())
      fail("cannot reshape " + shape_string(x.shape) + " to " + shape_string(to));
    return {t};
  }
  if (op_.kind == OpKind::kBroadcast) {
    const Extents& to = op_.as<ShapeAttrs>().shape;
    need_static(to, "shape");
    if (broadcast_shapes(x.shape, to, op_) != to)
      fail("cannot broadcast " + shape_string(x.shape) + " to " + shape_string(to));
    return {Type{TypeKind::kTile, x.dtype, to}};
  }
  if (op_.kind == OpKind::kTranspose) {
    const Extents& perm = op_.as<TransposeAttrs>().permutation;
    if (perm.size() != x.shape.size())
      fail("permutation " + shape_string(perm) + " for rank " + std::to_string(x.shape.size()));
    std::vector<bool> seen(x.shape.size(), false);
    std::vector<std::int64_t> shape;
    for (std::int64_t p : perm) {
      const int a = axis(p, x.shape.size());
      if (seen[a]) fail("permutation " + shape_string(perm) + " repeats a dim");
      seen[a] = true;
      shape.push_back(x.shape[a]);
    }
    return {Type{TypeKind::kTile, x.dtype, shape}};
  }
  // Slice.
  const SliceAttrs& slice = op_.as<SliceAttrs>();
  need_static(slice.shape, "shape");
  if (slice.offsets.size() != x.shape.size() || slice.shape.size() != x.shape.size())
    fail("offsets and shape need rank " + std::to_string(x.shape.size()));
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    if (slice.offsets[d] < 0 ||
        slice.offsets[d] > x.shape[d] - slice.shape[d])  // no overflowing sum
      fail("sub-tile " + shape_string(slice.shape) + " at " + shape_string(slice.offsets) +
           " exceeds " + shape_string(x.shape));
  }
  return {Type{TypeKind::kTile, x.dtype, slice.shape}};
}

std::vector<Type> Checker::control() const {
  std::vector<Type> results;
  if (op_.kind == OpKind::kFor) {
    for (std::size_t i = 0; i < 3; ++i) need_int_scalar(i, "range bound");
    const Region& body = op_.regions.at(0);
    const std::size_t carried = op_.operands.size() - 3;
    if (body.args.size() != carried + 1 || body.yields.size() != carried)
      fail("malformed loop", ErrorKind::kInternal);
    if (op_.as<ForAttrs>().parallel && carried > 0) {
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

}  // namespace tileops::tl::detail
