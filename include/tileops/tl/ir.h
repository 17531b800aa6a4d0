// The tile-language IR: a kernel is one Function holding a Region of Ops in SSA form. Values are
// numbered per function (`%3`); every value has a Type: a scalar, a tile (static shape) or a
// global tensor (dynamic shape). `for` and `if` ops own nested Regions whose arguments are the
// induction variable and loop-carried values and whose `yield` list feeds the op's results.
// Ops carry the user's source location so that the verifier and the backends can point at it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
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

enum class OpKind : std::uint8_t {
  kConstant,   // attrs: number (f or i); result scalar
  kBlockIdx,   // result int64 scalar
  kBlockNum,   // result int64 scalar
  kTensor,     // operands: ptr, shape..., [strides...]; attrs: ints[0] = rank, flag has_strides
  kTensorDim,  // operands: tensor; attrs: axis; result int64 scalar
  kLoad,       // operands: tensor, offsets..., pad (scalar); attrs: shape, location
  kStore,      // operands: value, tensor, offsets..., [mask count]; flag: has mask
  kAtomic,     // operands: value, tensor, offsets..., [mask count]; sub: AtomicOp
  kPrefetch,   // operands: tensor, offsets...; attrs: shape (a hint; no result)
  kFull,       // operands: value (scalar); attrs: shape, dtype
  kArange,     // attrs: shape {n}, dtype
  kUnary,      // operands: x; sub: UnaryOp
  kBinary,     // operands: a, b; sub: BinaryOp
  kWhere,      // operands: cond, a, b
  kCast,       // operands: x; attrs: dtype, sub: RoundMode, flag: bitcast (sub unused)
  kReduce,     // operands: x; sub: ReduceOp; attrs: dims (ints), flag keep_dims
  kCumsum,     // operands: x; attrs: axis
  kReshape,    // operands: x; attrs: shape
  kBroadcast,  // operands: x; attrs: shape
  kTranspose,  // operands: x; attrs: permutation (ints)
  kSlice,      // operands: x; attrs: offsets (ints), shape
  kConcat,     // operands: tiles...; attrs: axis
  kMatmul,     // operands: a, b, [acc or bias]; flag: has third operand
  kFor,        // operands: start, stop, step, inits...; region: (iv, carried...) -> yields
  kIf,         // operands: cond; regions: then, else -> yields
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

struct Op {
  OpKind kind = OpKind::kConstant;
  std::uint8_t sub = 0;                 // UnaryOp / BinaryOp / ReduceOp / AtomicOp / RoundMode
  bool flag = false;                    // kind-specific (see OpKind)
  DataType dtype = DataType::kFloat32;  // kFull, kArange, kCast, kConstant
  std::vector<std::int64_t> ints;       // shape / dims / axis / permutation / offsets
  std::vector<std::int64_t> ints2;      // second list (kSlice shape; kFor: unroll, parallel)
  double number = 0;                    // kConstant float value
  std::int64_t integer = 0;             // kConstant integer value
  std::vector<int> operands;
  std::vector<int> results;
  std::vector<Region> regions;
  SourceLoc loc;
  TileLocation location = TileLocation::kAny;  // kLoad: the location= hint
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
