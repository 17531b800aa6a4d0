// Printable names of the IR enums; these spellings are part of the stable text form.
#include <string>

#include "tileops/core/error.h"
#include "tileops/tl/ir.h"

namespace tileops::tl {
namespace {

template <std::size_t N>
const char* pick(const char* const (&names)[N], std::size_t index) {
  return index < N ? names[index] : "?";
}

}  // namespace

const char* name_of(OpKind kind) {
  static const char* const kNames[] = {
      "const",  "block_idx", "block_num", "tensor", "tensor_dim", "load",      "store",
      "atomic", "prefetch",  "full",      "arange", "unary",      "binary",    "where",
      "cast",   "reduce",    "cumsum",    "sort",   "reshape",    "broadcast", "transpose",
      "slice",  "concat",    "matmul",    "for",    "if"};
  return pick(kNames, static_cast<std::size_t>(kind));
}

const char* name_of(UnaryOp op) {
  static const char* const kNames[] = {
      "abs",   "ceil",  "floor",       "round",      "trunc",    "exp",      "exp2",
      "expm1", "log",   "log2",        "log1p",      "sqrt",     "rsqrt",    "sin",
      "cos",   "tan",   "sinh",        "cosh",       "tanh",     "erf",      "sigmoid",
      "relu",  "gelu",  "gelu_tanh",   "silu",       "softplus", "negative", "reciprocal",
      "isnan", "isinf", "bitwise_not", "logical_not"};
  return pick(kNames, static_cast<std::size_t>(op));
}

const char* name_of(BinaryOp op) {
  static const char* const kNames[] = {
      "add",     "sub",     "mul",         "div",         "floordiv",   "mod",
      "maximum", "minimum", "pow",         "eq",          "ne",         "lt",
      "le",      "gt",      "ge",          "bitwise_and", "bitwise_or", "bitwise_xor",
      "shl",     "shr",     "logical_and", "logical_or"};
  return pick(kNames, static_cast<std::size_t>(op));
}

const char* name_of(ReduceOp op) {
  static const char* const kNames[] = {"reduce_sum",  "reduce_max",  "reduce_min",
                                       "reduce_prod", "reduce_mean", "argmax",
                                       "argmin",      "all",         "any"};
  return pick(kNames, static_cast<std::size_t>(op));
}

const char* name_of(AtomicOp op) {
  static const char* const kNames[] = {"atomic_add", "atomic_max", "atomic_min"};
  return pick(kNames, static_cast<std::size_t>(op));
}

const char* name_of(RoundMode mode) {
  static const char* const kNames[] = {"rint", "floor", "ceil", "trunc", "round_half_away"};
  return pick(kNames, static_cast<std::size_t>(mode));
}

const char* name_of(TileLocation location) {
  static const char* const kNames[] = {"any", "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB"};
  return pick(kNames, static_cast<std::size_t>(location));
}

const char* name_of(const Op& op) {
  if (!attrs_match(op.kind, op.attrs)) return name_of(op.kind);  // a malformed op, being reported
  switch (op.kind) {
    case OpKind::kUnary:
      return name_of(op.as<UnaryAttrs>().op);
    case OpKind::kBinary:
      return name_of(op.as<BinaryAttrs>().op);
    case OpKind::kReduce:
      return name_of(op.as<ReduceAttrs>().op);
    case OpKind::kAtomic:
      return name_of(op.as<AtomicAttrs>().op);
    default:
      return name_of(op.kind);
  }
}

OpAttrs default_attrs(OpKind kind) {
  switch (kind) {
    case OpKind::kConstant:
      return ConstantAttrs{};
    case OpKind::kTensor:
      return TensorAttrs{};
    case OpKind::kTensorDim:
    case OpKind::kCumsum:
    case OpKind::kConcat:
      return AxisAttrs{};
    case OpKind::kLoad:
      return LoadAttrs{};
    case OpKind::kStore:
      return StoreAttrs{};
    case OpKind::kAtomic:
      return AtomicAttrs{};
    case OpKind::kPrefetch:
    case OpKind::kReshape:
    case OpKind::kBroadcast:
      return ShapeAttrs{};
    case OpKind::kFull:
    case OpKind::kArange:
      return FillAttrs{};
    case OpKind::kUnary:
      return UnaryAttrs{};
    case OpKind::kBinary:
      return BinaryAttrs{};
    case OpKind::kCast:
      return CastAttrs{};
    case OpKind::kReduce:
      return ReduceAttrs{};
    case OpKind::kSort:
      return SortAttrs{};
    case OpKind::kTranspose:
      return TransposeAttrs{};
    case OpKind::kSlice:
      return SliceAttrs{};
    case OpKind::kMatmul:
      return MatmulAttrs{};
    case OpKind::kFor:
      return ForAttrs{};
    case OpKind::kBlockIdx:
    case OpKind::kBlockNum:
    case OpKind::kWhere:
    case OpKind::kIf:
      return NoAttrs{};
  }
  return NoAttrs{};
}

bool attrs_match(OpKind kind, const OpAttrs& attrs) {
  return default_attrs(kind).index() == attrs.index();
}

void throw_attrs_mismatch(OpKind kind) {
  throw_internal_error("tl IR", std::string("a '") + name_of(kind) +
                                    "' op holds the attributes of another kind of op");
}

bool is_pure(const Op& op) {
  switch (op.kind) {
    case OpKind::kStore:
    case OpKind::kAtomic:
    case OpKind::kPrefetch:
    case OpKind::kFor:
    case OpKind::kIf:
      return false;
    default:
      return true;
  }
}

}  // namespace tileops::tl
