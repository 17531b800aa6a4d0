// The tile-language IR: a kernel is one Function holding a Region of Ops in SSA form. Values are
// numbered per function (`%3`); every value has a Type: a scalar, a tile (static shape) or a
// global tensor (dynamic shape). `for` and `if` ops own nested Regions whose arguments are the
// induction variable and loop-carried values and whose `yield` list feeds the op's results.
// Ops carry the user's source location so that the verifier and the backends can point at it.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tileops/core/data_type.h"

namespace tileops::tl {

// Where in the user's kernel an op was traced (C++ std::source_location or a Python frame).
struct SourceLoc {
  std::string file;
  std::uint32_t line = 0;
  std::string function;
  std::string to_string() const;  // "vadd.cc:12" (file base name)
};

enum class TypeKind : std::uint8_t { kScalar, kTile, kTensor, kPointer };

struct Type {
  TypeKind kind = TypeKind::kScalar;
  DataType dtype = DataType::kFloat32;
  std::vector<std::int64_t> shape;  // tiles: static extents; tensors: one -1 per dim (rank)
  bool operator==(const Type&) const = default;
  std::int64_t size() const;      // elements of a tile (1 for scalars)
  std::string to_string() const;  // "f32", "tile<4x128xf32>", "tensor<2xf16>", "ptr<bf16>"
};

// Each kind's attributes are the struct named after the `;` (see "Attributes" below).
enum class OpKind : std::uint8_t {
  kConstant,   // ConstantAttrs; result scalar
  kBlockIdx,   // NoAttrs; result int64 scalar
  kBlockNum,   // NoAttrs; result int64 scalar
  kTensor,     // TensorAttrs; operands: ptr, shape..., [strides...]
  kTensorDim,  // AxisAttrs; operands: tensor; result int64 scalar
  kLoad,       // LoadAttrs; operands: tensor, offsets..., pad (scalar)
  kStore,      // StoreAttrs; operands: value, tensor, offsets..., [mask count]
  kAtomic,     // AtomicAttrs; operands: value, tensor, offsets..., [mask count]
  kPrefetch,   // ShapeAttrs; operands: tensor, offsets... (a hint; no result)
  kFull,       // FillAttrs; operands: value (scalar)
  kArange,     // FillAttrs (shape {n})
  kUnary,      // UnaryAttrs; operands: x
  kBinary,     // BinaryAttrs; operands: a, b
  kWhere,      // NoAttrs; operands: cond, a, b
  kCast,       // CastAttrs; operands: x
  kReduce,     // ReduceAttrs; operands: x
  kCumsum,     // AxisAttrs; operands: x
  kSort,       // SortAttrs; operands: x (sort, argsort, top-k along one axis)
  kReshape,    // ShapeAttrs; operands: x
  kBroadcast,  // ShapeAttrs; operands: x
  kTranspose,  // TransposeAttrs; operands: x
  kSlice,      // SliceAttrs; operands: x
  kConcat,     // AxisAttrs; operands: tiles...
  kMatmul,     // MatmulAttrs; operands: a, b, [acc or bias]
  kFor,  // ForAttrs; operands: start, stop, step, inits...; region: (iv, carried...) -> yields
  kIf,   // NoAttrs; operands: cond; regions: then, else -> yields
};

enum class UnaryOp : std::uint8_t {
  kAbs,
  kCeil,
  kFloor,
  kRound,
  kTrunc,
  kExp,
  kExp2,
  kExpm1,
  kLog,
  kLog2,
  kLog1p,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTan,
  kSinh,
  kCosh,
  kTanh,
  kErf,
  kSigmoid,
  kRelu,
  kGeluErf,
  kGeluTanh,
  kSilu,
  kSoftplus,
  kNegative,
  kReciprocal,
  kIsnan,
  kIsinf,
  kBitNot,
  kLogicalNot,
};

enum class BinaryOp : std::uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kMaximum,
  kMinimum,
  kPow,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kBitAnd,
  kBitOr,
  kBitXor,
  kShl,
  kShr,
  kLogicalAnd,
  kLogicalOr,
};

enum class ReduceOp : std::uint8_t { kSum, kMax, kMin, kProd, kMean, kArgmax, kArgmin, kAll, kAny };
enum class AtomicOp : std::uint8_t { kAdd, kMax, kMin };
enum class RoundMode : std::uint8_t { kRint, kFloor, kCeil, kTrunc, kHalfAway };
// Where a loaded tile lives on an Ascend core (asc2's TileLocation): the vector unit's buffer
// (UB), the cube's staging buffer (L1), its left/right operand buffers (L0A, L0B), its
// accumulator (L0C), the bias table (BT) and the fixpipe buffer (FB). kAny: not given. A hint:
// the verifier checks it against the tile's uses; no backend here changes its code for it.
enum class TileLocation : std::uint8_t { kAny, kUB, kL1, kL0A, kL0B, kL0C, kBT, kFB };

const char* name_of(OpKind kind);
const char* name_of(UnaryOp op);
const char* name_of(BinaryOp op);
const char* name_of(ReduceOp op);
const char* name_of(AtomicOp op);
const char* name_of(RoundMode mode);
const char* name_of(TileLocation location);  // "UB", "L0A", ... ("any" for kAny)

struct Region;

// Attributes. One struct per kind of op (shared where kinds take the same settings), each
// compared by its defaulted equality: passes compare whole attribute sets and never list fields.
using Extents = std::vector<std::int64_t>;  // static tile extents, dims or a permutation

// A double compared by its bits: constants 0.0 and -0.0 (or two NaN payloads) stay distinct.
struct ExactDouble {
  double value = 0;
  bool operator==(const ExactDouble& other) const {
    return std::bit_cast<std::uint64_t>(value) == std::bit_cast<std::uint64_t>(other.value);
  }
};

struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};
struct ConstantAttrs {
  DataType dtype = DataType::kFloat32;
  ExactDouble number;        // the value of a floating dtype
  std::int64_t integer = 0;  // the value of an integer or bool dtype
  bool operator==(const ConstantAttrs&) const = default;
};
struct TensorAttrs {
  std::int64_t rank = 0;
  bool has_strides = false;  // strides follow the shape operands; else row-major
  bool operator==(const TensorAttrs&) const = default;
};
struct AxisAttrs {
  std::int64_t axis = 0;  // may be negative (counts from the last dim)
  bool operator==(const AxisAttrs&) const = default;
};
struct LoadAttrs {
  Extents shape;
  TileLocation location = TileLocation::kAny;  // the location= hint
  bool operator==(const LoadAttrs&) const = default;
};
struct StoreAttrs {
  bool masked = false;  // the last operand counts the elements to store
  bool operator==(const StoreAttrs&) const = default;
};
struct AtomicAttrs {
  AtomicOp op = AtomicOp::kAdd;
  bool masked = false;  // the last operand counts the elements to update
  bool operator==(const AtomicAttrs&) const = default;
};
struct ShapeAttrs {
  Extents shape;
  bool operator==(const ShapeAttrs&) const = default;
};
struct FillAttrs {
  Extents shape;
  DataType dtype = DataType::kFloat32;
  bool operator==(const FillAttrs&) const = default;
};
struct UnaryAttrs {
  UnaryOp op = UnaryOp::kAbs;
  bool operator==(const UnaryAttrs&) const = default;
};
struct BinaryAttrs {
  BinaryOp op = BinaryOp::kAdd;
  bool operator==(const BinaryAttrs&) const = default;
};
struct CastAttrs {
  DataType dtype = DataType::kFloat32;
  RoundMode round = RoundMode::kRint;  // unused by a bitcast
  bool bitcast = false;
  bool operator==(const CastAttrs&) const = default;
};
// Sorts every line of a tile along `axis` (stable: equal keys keep their order; NaN above +inf)
// and keeps the first `k` of each line; the result holds the values, or their int32 positions.
struct SortAttrs {
  std::int64_t axis = -1;  // may be negative (counts from the last dim)
  std::int64_t k = 0;      // kept per line: 1..extent
  bool descending = false;
  bool indices = false;
  bool operator==(const SortAttrs&) const = default;
};
struct ReduceAttrs {
  ReduceOp op = ReduceOp::kSum;
  Extents dims;  // empty: every dim
  bool keep_dims = false;
  bool operator==(const ReduceAttrs&) const = default;
};
struct TransposeAttrs {
  Extents permutation;
  bool operator==(const TransposeAttrs&) const = default;
};
struct SliceAttrs {
  Extents offsets;
  Extents shape;
  bool operator==(const SliceAttrs&) const = default;
};
struct MatmulAttrs {
  bool accumulate = false;  // the third operand is an accumulator (else, if present, a bias)
  bool operator==(const MatmulAttrs&) const = default;
};
struct ForAttrs {
  std::int64_t unroll = 1;
  bool parallel = false;  // iterations spread over threads (no carried values)
  bool operator==(const ForAttrs&) const = default;
};

using OpAttrs =
    std::variant<NoAttrs, ConstantAttrs, TensorAttrs, AxisAttrs, LoadAttrs, StoreAttrs, AtomicAttrs,
                 ShapeAttrs, FillAttrs, UnaryAttrs, BinaryAttrs, CastAttrs, ReduceAttrs,
                 TransposeAttrs, SliceAttrs, MatmulAttrs, ForAttrs, SortAttrs>;

// The attributes an op of `kind` carries, default-initialised.
OpAttrs default_attrs(OpKind kind);
// Whether `attrs` hold the struct `kind` takes.
bool attrs_match(OpKind kind, const OpAttrs& attrs);
// Throws tileops::Error: an op of `kind` read as the wrong attribute struct (a malformed IR).
[[noreturn]] void throw_attrs_mismatch(OpKind kind);

struct Op {
  OpKind kind = OpKind::kConstant;
  OpAttrs attrs = ConstantAttrs{};
  std::vector<int> operands;
  std::vector<int> results;
  std::vector<Region> regions;
  SourceLoc loc;

  // The attributes as struct A; throws tileops::Error when the op holds another struct.
  template <class A>
  const A& as() const {
    const A* a = std::get_if<A>(&attrs);
    if (a == nullptr) throw_attrs_mismatch(kind);
    return *a;
  }
  template <class A>
  A& as() {
    A* a = std::get_if<A>(&attrs);
    if (a == nullptr) throw_attrs_mismatch(kind);
    return *a;
  }
};

struct Region {
  std::vector<int> args;  // values defined on entry
  std::vector<Op> ops;
  std::vector<int> yields;  // values flowing out (for/if results)
};

enum class ParamKind : std::uint8_t { kGlobalAddress, kInt, kFloat, kBool };

struct Param {
  ParamKind kind = ParamKind::kInt;
  int value = -1;  // the value id it defines
  std::string name;
};

struct Function {
  std::string name;
  std::vector<Param> params;
  std::vector<Type> types;  // indexed by value id
  Region body;

  int new_value(Type type) {
    types.push_back(std::move(type));
    return static_cast<int>(types.size()) - 1;
  }
  const Type& type_of(int value) const { return types.at(value); }
};

// Stable text form (print_ir, dump_dir, hashing). With `locations`, each op line ends with its
// source location.
std::string print(const Function& function, bool locations = false);
// FNV-1a hash of the printed form without locations: identical kernels hash alike.
std::uint64_t hash_ir(const Function& function);

// Checks SSA scoping (every operand defined before use, in an enclosing region), every op's
// operand types and attributes, loop/branch result types, and that tiles loaded with a
// TileLocation are used as that memory allows (L0A/L0B: a matmul's left/right operand). Throws
// tileops::Error naming the construct and the source location of the first offending op.
void verify(const Function& function);

// Ops that only compute values (removable when unused); stores, atomics, loops, ifs are not.
bool is_pure(const Op& op);
// The op's name in the IR text: its sub-operation for unary/binary/reduce/atomic ops ("exp",
// "add", ...), else its kind.
const char* name_of(const Op& op);

}  // namespace tileops::tl
