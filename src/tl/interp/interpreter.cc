// The interpreter's op dispatch and control flow (see interpreter.h).
#include "src/tl/interp/interpreter.h"

#include <algorithm>

#include "src/tl/interp/eval.h"
#include "src/tl/verify/infer.h"

namespace tileops::tl::interp {
namespace {

class Frame {
 public:
  Frame(const Function& f, std::int64_t block, std::int64_t num_blocks, std::mutex* atomic_mutex)
      : f_(f),
        slots_(f.types.size()),
        block_(block),
        num_blocks_(num_blocks),
        atomic_mutex_(atomic_mutex) {}

  Slot& slot(int id) { return slots_[static_cast<std::size_t>(id)]; }
  const Buffer& buf(int id) { return slots_[static_cast<std::size_t>(id)].buffer; }
  std::int64_t scalar_int(int id) { return buf(id).get_int(0); }

  void run(const Region& region) {
    for (const Op& op : region.ops) exec(op);
  }

 private:
  Buffer& result(const Op& op, std::size_t i = 0) {
    const Type& t = f_.type_of(op.results[i]);
    Buffer& b = slot(op.results[i]).buffer;
    b.resize(t.dtype, t.kind == TypeKind::kTile ? t.shape : std::vector<std::int64_t>{});
    return b;
  }

  std::vector<std::int64_t> ints(const Op& op, std::size_t first, std::size_t count) {
    std::vector<std::int64_t> v;
    for (std::size_t i = 0; i < count; ++i) v.push_back(scalar_int(op.operands[first + i]));
    return v;
  }

  void exec(const Op& op);
  void exec_for(const Op& op);
  void exec_if(const Op& op);
  void exec_tensor(const Op& op);

  const Function& f_;
  std::vector<Slot> slots_;
  std::int64_t block_;
  std::int64_t num_blocks_;
  std::mutex* atomic_mutex_;
};

void Frame::exec_tensor(const Op& op) {
  TensorView& t = slot(op.results[0]).tensor;
  const TensorAttrs& attrs = op.as<TensorAttrs>();
  const auto rank = static_cast<std::size_t>(attrs.rank);
  t.base = static_cast<char*>(slot(op.operands[0]).pointer);
  t.dtype = f_.type_of(op.operands[0]).dtype;
  t.shape = ints(op, 1, rank);
  for (std::int64_t e : t.shape) {
    if (e < 0)
      trace_error(ErrorKind::kInvalidArgument, op.loc, "tensor",
                  "negative extent " + std::to_string(e));
  }
  t.strides = attrs.has_strides ? ints(op, 1 + rank, rank) : row_major_strides(t.shape);
  if (!tensor_geometry_ok(t)) {
    std::string what = "extents [";
    for (std::size_t i = 0; i < rank; ++i) what += (i ? ", " : "") + std::to_string(t.shape[i]);
    what += "], strides [";
    for (std::size_t i = 0; i < rank; ++i) what += (i ? ", " : "") + std::to_string(t.strides[i]);
    trace_error(ErrorKind::kInvalidArgument, op.loc, "tensor",
                std::string(kTensorGeometryMessage) + " (" + what + "])");
  }
}

void Frame::exec(const Op& op) {
  switch (op.kind) {
    case OpKind::kConstant: {
      Buffer& b = result(op);
      const ConstantAttrs& value = op.as<ConstantAttrs>();
      if (b.floating())
        b.set(0, value.number.value);
      else
        b.set_int(0, value.integer);
      return;
    }
    case OpKind::kBlockIdx:
      result(op).set_int(0, block_);
      return;
    case OpKind::kBlockNum:
      result(op).set_int(0, num_blocks_);
      return;
    case OpKind::kTensor:
      exec_tensor(op);
      return;
    case OpKind::kTensorDim: {
      const TensorView& t = slot(op.operands[0]).tensor;
      const auto rank = static_cast<std::int64_t>(t.shape.size());
      const std::int64_t axis = op.as<AxisAttrs>().axis;
      result(op).set_int(0, t.shape[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)]);
      return;
    }
    case OpKind::kLoad: {
      const TensorView& t = slot(op.operands[0]).tensor;
      eval_load(t, ints(op, 1, t.shape.size()), buf(op.operands.back()), result(op));
      return;
    }
    case OpKind::kPrefetch:  // a hint: nothing to do
      return;
    case OpKind::kStore:
    case OpKind::kAtomic: {
      const TensorView& t = slot(op.operands[1]).tensor;
      const bool masked =
          op.kind == OpKind::kAtomic ? op.as<AtomicAttrs>().masked : op.as<StoreAttrs>().masked;
      const std::int64_t mask =
          masked ? std::max<std::int64_t>(0, scalar_int(op.operands.back())) : -1;
      eval_store(buf(op.operands[0]), t, ints(op, 2, t.shape.size()), mask, op, atomic_mutex_);
      return;
    }
    case OpKind::kFull: {
      const Buffer& v = buf(op.operands[0]);
      Buffer& out = result(op);
      for (std::size_t k = 0; k < out.size(); ++k) {
        if (out.floating())
          out.f[k] = v.f[0];
        else
          out.i[k] = v.i[0];
      }
      return;
    }
    case OpKind::kArange: {
      Buffer& out = result(op);
      for (std::size_t k = 0; k < out.size(); ++k) out.set_int(k, static_cast<std::int64_t>(k));
      return;
    }
    case OpKind::kUnary:
      eval_unary(op.as<UnaryAttrs>().op, buf(op.operands[0]), result(op));
      return;
    case OpKind::kBinary:
      eval_binary(op.as<BinaryAttrs>().op, buf(op.operands[0]), buf(op.operands[1]), result(op));
      return;
    case OpKind::kWhere:
      eval_where(buf(op.operands[0]), buf(op.operands[1]), buf(op.operands[2]), result(op));
      return;
    case OpKind::kCast: {
      const Buffer& x = buf(op.operands[0]);
      Buffer& out = result(op);
      const CastAttrs& cast = op.as<CastAttrs>();
      if (cast.bitcast) {
        for (std::size_t k = 0; k < out.size(); ++k) bitcast_element(x, k, out, k);
        return;
      }
      for (std::size_t k = 0; k < out.size(); ++k) cast_element(x, k, out, k, cast.round);
      return;
    }
    case OpKind::kReduce: {
      const ReduceAttrs& reduce = op.as<ReduceAttrs>();
      eval_reduce(reduce.op, buf(op.operands[0]), reduce.dims, result(op));
      return;
    }
    case OpKind::kCumsum: {
      const Buffer& x = buf(op.operands[0]);
      const auto rank = static_cast<std::int64_t>(x.shape.size());
      const std::int64_t axis = op.as<AxisAttrs>().axis;
      eval_cumsum(x, static_cast<int>(axis < 0 ? axis + rank : axis), result(op));
      return;
    }
    case OpKind::kSort:
      eval_sort(buf(op.operands[0]), op.as<SortAttrs>(), result(op));
      return;
    case OpKind::kReshape: {
      Buffer& out = result(op);
      const Buffer& x = buf(op.operands[0]);
      out.f = x.f;
      out.i = x.i;
      return;
    }
    case OpKind::kBroadcast:
      eval_broadcast(buf(op.operands[0]), result(op));
      return;
    case OpKind::kTranspose:
      eval_transpose(buf(op.operands[0]), op.as<TransposeAttrs>().permutation, result(op));
      return;
    case OpKind::kSlice:
      eval_slice(buf(op.operands[0]), op.as<SliceAttrs>().offsets, result(op));
      return;
    case OpKind::kConcat: {
      std::vector<const Buffer*> xs;
      for (int id : op.operands) xs.push_back(&buf(id));
      const auto rank = static_cast<std::int64_t>(xs[0]->shape.size());
      const std::int64_t axis = op.as<AxisAttrs>().axis;
      eval_concat(xs, static_cast<int>(axis < 0 ? axis + rank : axis), result(op));
      return;
    }
    case OpKind::kMatmul:
      eval_matmul(buf(op.operands[0]), buf(op.operands[1]),
                  op.operands.size() > 2 ? &buf(op.operands[2]) : nullptr,
                  op.as<MatmulAttrs>().accumulate, result(op));
      return;
    case OpKind::kFor:
      exec_for(op);
      return;
    case OpKind::kIf:
      exec_if(op);
      return;
  }
}

void Frame::exec_for(const Op& op) {
  const std::int64_t start = scalar_int(op.operands[0]);
  const std::int64_t stop = scalar_int(op.operands[1]);
  const std::int64_t step = scalar_int(op.operands[2]);
  const Region& body = op.regions[0];
  const std::size_t carried = body.args.size() - 1;
  for (std::size_t i = 0; i < carried; ++i) slot(body.args[i + 1]) = slot(op.operands[3 + i]);
  Buffer& iv = slot(body.args[0]).buffer;
  iv.resize(DataType::kInt64, {});
  // A constant 0 fails at trace time; one known only at run time fails here, as Python's range.
  if (step == 0) {
    trace_error(ErrorKind::kInvalidArgument, op.loc, "range",
                "step must not be 0 (it is at run time)");
  }
  // Counted, as Python's range: a counter near the int64 limits never steps past them.
  const auto first = static_cast<std::uint64_t>(start), last = static_cast<std::uint64_t>(stop);
  const auto stride = static_cast<std::uint64_t>(step);
  const std::uint64_t count = step > 0 ? (start < stop ? (last - first - 1) / stride + 1 : 0)
                                       : (start > stop ? (first - last - 1) / (0 - stride) + 1 : 0);
  for (std::uint64_t k = 0; k < count; ++k) {
    iv.i[0] = static_cast<std::int64_t>(first + k * stride);
    run(body);
    // Copy yields first: a yield may be another carried argument.
    std::vector<Slot> next;
    next.reserve(carried);
    for (std::size_t c = 0; c < carried; ++c) next.push_back(slot(body.yields[c]));
    for (std::size_t c = 0; c < carried; ++c) slot(body.args[c + 1]) = std::move(next[c]);
  }
  for (std::size_t c = 0; c < carried; ++c) slot(op.results[c]) = slot(body.args[c + 1]);
}

void Frame::exec_if(const Op& op) {
  const Region& taken = op.regions[buf(op.operands[0]).i[0] != 0 ? 0 : 1];
  run(taken);
  std::vector<Slot> out;
  for (int y : taken.yields) out.push_back(slot(y));
  for (std::size_t i = 0; i < out.size(); ++i) slot(op.results[i]) = std::move(out[i]);
}

}  // namespace

void Interpreter::run_block(std::int64_t block, std::int64_t num_blocks,
                            const std::vector<Slot>& params, std::mutex* atomic_mutex) const {
  Frame frame(function_, block, num_blocks, atomic_mutex);
  for (std::size_t i = 0; i < params.size(); ++i) frame.slot(function_.params[i].value) = params[i];
  frame.run(function_.body);
}

}  // namespace tileops::tl::interp
