// Builder: global tensors, loads, stores, atomics, masks, tile creation and block indices.
#include "src/tl/builder/tracer.h"
#include "tileops/tl/ops.h"

namespace tileops::tl {
namespace {

std::vector<int> offsets_of(Tracer& t, const Value& tensor, const IndexList& offsets,
                            const char* construct, const Loc& loc) {
  const Type& type = t.type_of(tensor.id());
  if (type.kind != TypeKind::kTensor) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), construct,
                "target must be a global tensor (tl::tensor), got " + type.to_string());
  }
  if (offsets.size() != type.shape.size()) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), construct,
                "expected " + std::to_string(type.shape.size()) + " offsets, got " +
                    std::to_string(offsets.size()));
  }
  std::vector<int> ids;
  for (const Operand& o : offsets) ids.push_back(index_value(t, o, construct));
  return ids;
}

IndexList tile_offsets(const Shape& shape, const TileId& id, const char* construct,
                       const Loc& loc) {
  if (shape.size() != id.index.size()) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), construct,
                "tile_id has " + std::to_string(id.index.size()) + " entries for a rank-" +
                    std::to_string(shape.size()) + " tile");
  }
  IndexList offsets;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    offsets.emplace_back(binary(BinaryOp::kMul, id.index[i], shape[i], loc), id.index[i].loc);
  }
  return offsets;
}

void write(OpKind kind, AtomicOp atomic, const Operand& value, const Value& tensor,
           const IndexList& offsets, const char* construct, const Loc& loc) {
  Tracer& t = Tracer::current(construct, loc);
  Op op = make_op(kind, loc);
  bool masked = false;
  int v = value.value.id();
  const Type& tensor_type = t.type_of(tensor.id());
  // Numbers and scalars take the tensor's dtype; tiles must match it (a silent narrowing of a
  // whole tile is a bug more often than not).
  if (t.type_of(v).kind == TypeKind::kScalar && tensor_type.kind == TypeKind::kTensor) {
    v = coerce(t, v, tensor_type.dtype, loc);
  }
  op.operands = {v, tensor.id()};
  for (int o : offsets_of(t, tensor, offsets, construct, loc)) op.operands.push_back(o);
  if (!t.masks().empty()) {
    masked = true;
    op.operands.push_back(t.masks().back());
  }
  if (kind == OpKind::kAtomic) {
    op.attrs = AtomicAttrs{.op = atomic, .masked = masked};
  } else {
    op.attrs = StoreAttrs{.masked = masked};
  }
  t.append(std::move(op));
}

}  // namespace

Value tensor(const Value& ptr, const IndexList& shape, const IndexList& strides, Loc loc) {
  Tracer& t = Tracer::current("tensor", loc);
  Op op = make_op(OpKind::kTensor, loc);
  op.as<TensorAttrs>().rank = static_cast<std::int64_t>(shape.size());
  op.operands = {ptr.id()};
  for (const Operand& d : shape) op.operands.push_back(index_value(t, d, "tensor"));
  if (!strides.empty()) {
    if (strides.size() != shape.size()) {
      trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "tensor",
                  "expected " + std::to_string(shape.size()) + " strides, got " +
                      std::to_string(strides.size()));
    }
    op.as<TensorAttrs>().has_strides = true;
    for (const Operand& s : strides) op.operands.push_back(index_value(t, s, "tensor"));
  }
  return Value::from_id(t.append1(std::move(op)));
}

Value Value::dim(int axis, Loc loc) const {
  Tracer& t = Tracer::current("dim", loc);
  Op op = make_op(OpKind::kTensorDim, loc);
  op.attrs = AxisAttrs{.axis = axis};
  op.operands = {id_};
  return from_id(t.append1(std::move(op)));
}

Value load(const Value& tensor, const Shape& shape, const IndexList& offsets,
           const Operand& pad_value, Loc loc) {
  return load(tensor, shape, offsets, pad_value, TileLocation::kAny, loc);
}

Value load(const Value& tensor, const Shape& shape, const TileId& tile_id, const Operand& pad_value,
           Loc loc) {
  return load(tensor, shape, tile_id, pad_value, TileLocation::kAny, loc);
}

Value load(const Value& tensor, const Shape& shape, const TileId& tile_id, const Operand& pad_value,
           TileLocation location, Loc loc) {
  return load(tensor, shape, tile_offsets(shape, tile_id, "load", loc), pad_value, location, loc);
}

Value load(const Value& tensor, const Shape& shape, const IndexList& offsets,
           const Operand& pad_value, TileLocation location, Loc loc) {
  Tracer& t = Tracer::current("load", loc);
  Op op = make_op(OpKind::kLoad, loc);
  op.attrs = LoadAttrs{.shape = static_shape(t, shape, "load"), .location = location};
  op.operands = {tensor.id()};
  for (int o : offsets_of(t, tensor, offsets, "load", loc)) op.operands.push_back(o);
  const int pad = pad_value.value.id();
  if (t.type_of(pad).kind != TypeKind::kScalar) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), "load", "pad_value must be a scalar");
  }
  op.operands.push_back(coerce(t, pad, t.type_of(tensor.id()).dtype, loc));
  return Value::from_id(t.append1(std::move(op)));
}

void prefetch(const Value& tensor, const Shape& shape, const IndexList& offsets, Loc loc) {
  Tracer& t = Tracer::current("prefetch", loc);
  Op op = make_op(OpKind::kPrefetch, loc);
  op.attrs = ShapeAttrs{.shape = static_shape(t, shape, "prefetch")};
  op.operands = {tensor.id()};
  for (int o : offsets_of(t, tensor, offsets, "prefetch", loc)) op.operands.push_back(o);
  t.append(std::move(op));
}

void store(const Operand& value, const Value& tensor, const IndexList& offsets, Loc loc) {
  write(OpKind::kStore, AtomicOp::kAdd, value, tensor, offsets, "store", loc);
}

void store(const Operand& value, const Value& tensor, const TileId& tile_id, Loc loc) {
  Tracer& t = Tracer::current("store", loc);
  Shape shape;
  for (std::int64_t d : t.type_of(value.value.id()).shape) shape.emplace_back(d);
  write(OpKind::kStore, AtomicOp::kAdd, value, tensor, tile_offsets(shape, tile_id, "store", loc),
        "store", loc);
}

void atomic_add(const Operand& value, const Value& tensor, const IndexList& offsets, Loc loc) {
  write(OpKind::kAtomic, AtomicOp::kAdd, value, tensor, offsets, "atomic_add", loc);
}
void atomic_max(const Operand& value, const Value& tensor, const IndexList& offsets, Loc loc) {
  write(OpKind::kAtomic, AtomicOp::kMax, value, tensor, offsets, "atomic_max", loc);
}
void atomic_min(const Operand& value, const Value& tensor, const IndexList& offsets, Loc loc) {
  write(OpKind::kAtomic, AtomicOp::kMin, value, tensor, offsets, "atomic_min", loc);
}

Mask::Mask(const Operand& count, Loc loc) {
  Tracer& t = Tracer::current("mask", loc);
  t.masks().push_back(index_value(t, count, "mask"));
}

Mask::~Mask() {
  if (Tracer* t = Tracer::active(); t != nullptr && !t->masks().empty()) t->masks().pop_back();
}

Value full(const Shape& shape, const Operand& value, DataType dtype, Loc loc) {
  Tracer& t = Tracer::current("full", loc);
  Op op = make_op(OpKind::kFull, loc);
  op.attrs = FillAttrs{.shape = static_shape(t, shape, "full"), .dtype = dtype};
  op.operands = {coerce(t, value.value.id(), dtype, loc)};
  return Value::from_id(t.append1(std::move(op)));
}

Value zeros(const Shape& shape, DataType dtype, Loc loc) { return full(shape, 0, dtype, loc); }

Value full_like(const Value& tile, const Operand& value, Loc loc) {
  Shape shape;
  for (std::int64_t d : tile.shape()) shape.emplace_back(d);
  return full(shape, value, tile.dtype(), loc);
}

Value zeros_like(const Value& tile, Loc loc) { return full_like(tile, 0, loc); }

Value arange(std::int64_t n, DataType dtype, Loc loc) {
  Tracer& t = Tracer::current("arange", loc);
  Op op = make_op(OpKind::kArange, loc);
  op.attrs = FillAttrs{.shape = {n}, .dtype = dtype};
  return Value::from_id(t.append1(std::move(op)));
}

Value block_idx(Loc loc) {
  return Value::from_id(Tracer::current("block_idx", loc).append1(make_op(OpKind::kBlockIdx, loc)));
}

Value block_num(Loc loc) {
  return Value::from_id(Tracer::current("block_num", loc).append1(make_op(OpKind::kBlockNum, loc)));
}

Value ceildiv(const Operand& a, const Operand& b, Loc loc) {
  const Value sum = binary(BinaryOp::kAdd, a, b, loc);
  return floordiv(binary(BinaryOp::kSub, sum, 1, loc), b, loc);
}

Value num_tiles(const Value& tensor, int axis, std::int64_t tile, Loc loc) {
  return ceildiv(tensor.dim(axis, loc), tile, loc);
}

}  // namespace tileops::tl
