// The tile-language operations (SPEC_TL.md). Each appends one or more ops to the kernel being
// traced and checks its operands at once: a wrong shape, dtype or non-static extent throws a
// tileops::Error naming the construct and the user's source line.
#pragma once

#include <initializer_list>
#include <tuple>
#include <utility>
#include <vector>

#include "tileops/tl/value.h"

namespace tileops::tl {

using IndexList = std::vector<Operand>;  // offsets or extents: Values or numbers
using Shape = std::vector<Operand>;      // tile extents: must be trace-time constants
struct TileId {
  IndexList index;  // offsets = tile_id * tile shape
};

// --- global memory -------------------------------------------------------------------------
// A global view of `ptr` with runtime extents (and strides in elements; default contiguous).
Value tensor(const Value& ptr, const IndexList& shape, const IndexList& strides = {},
             Loc loc = Loc::current());
// A tile of static `shape` at `offsets`; out-of-bounds lanes read `pad_value`, never memory.
Value load(const Value& tensor, const Shape& shape, const IndexList& offsets,
           const Operand& pad_value = Operand(0), Loc loc = Loc::current());
Value load(const Value& tensor, const Shape& shape, const TileId& tile_id,
           const Operand& pad_value = Operand(0), Loc loc = Loc::current());
// The same, with asc2's TileLocation hint recorded on the load (ir.h): the verifier checks the
// tile's uses against it (an L0A tile feeds only a matmul's left operand, ...); no effect on
// results.
Value load(const Value& tensor, const Shape& shape, const IndexList& offsets,
           const Operand& pad_value, TileLocation location, Loc loc = Loc::current());
Value load(const Value& tensor, const Shape& shape, const TileId& tile_id, const Operand& pad_value,
           TileLocation location, Loc loc = Loc::current());
// A hint that the tile at `offsets` will be loaded soon: no effect on results, any offsets
// (out-of-bounds parts are ignored). The cpu backend fetches a tile that lies in the tensor,
// contiguous in memory, into the cache a few lines at a time during the vector loops that
// follow it in the same block of code (docs/tile-language.md).
void prefetch(const Value& tensor, const Shape& shape, const IndexList& offsets,
              Loc loc = Loc::current());
// Writes the in-bounds (and, inside a tl::Mask scope, unmasked) elements of a tile or scalar.
void store(const Operand& value, const Value& tensor, const IndexList& offsets,
           Loc loc = Loc::current());
void store(const Operand& value, const Value& tensor, const TileId& tile_id,
           Loc loc = Loc::current());
void atomic_add(const Operand& value, const Value& tensor, const IndexList& offsets,
                Loc loc = Loc::current());
void atomic_max(const Operand& value, const Value& tensor, const IndexList& offsets,
                Loc loc = Loc::current());
void atomic_min(const Operand& value, const Value& tensor, const IndexList& offsets,
                Loc loc = Loc::current());

// Limits the lanes (row-major, the first `count`) that stores and atomics write while alive.
class Mask {
 public:
  explicit Mask(const Operand& count, Loc loc = Loc::current());
  ~Mask();
  Mask(const Mask&) = delete;
  Mask& operator=(const Mask&) = delete;
};

// --- creation ------------------------------------------------------------------------------
Value full(const Shape& shape, const Operand& value, DataType dtype, Loc loc = Loc::current());
Value zeros(const Shape& shape, DataType dtype, Loc loc = Loc::current());
Value full_like(const Value& tile, const Operand& value, Loc loc = Loc::current());
Value zeros_like(const Value& tile, Loc loc = Loc::current());
Value arange(std::int64_t n, DataType dtype = DataType::kInt32, Loc loc = Loc::current());
Value copy(const Value& tile, const Shape& shape, const Shape& offsets, Loc loc = Loc::current());
Value concat(const std::vector<Value>& tiles, int axis, Loc loc = Loc::current());

// --- elementwise ---------------------------------------------------------------------------
Value binary(BinaryOp op, const Operand& a, const Operand& b, Loc loc);
Value unary(UnaryOp op, const Operand& x, Loc loc);

Value operator+(const Operand& a, const Operand& b);
Value operator-(const Operand& a, const Operand& b);
Value operator*(const Operand& a, const Operand& b);
Value operator/(const Operand& a, const Operand& b);  // true division (ints give float32)
Value operator%(const Operand& a, const Operand& b);  // Python modulo (sign of the divisor)
Value operator==(const Operand& a, const Operand& b);
Value operator!=(const Operand& a, const Operand& b);
Value operator<(const Operand& a, const Operand& b);
Value operator<=(const Operand& a, const Operand& b);
Value operator>(const Operand& a, const Operand& b);
Value operator>=(const Operand& a, const Operand& b);
Value operator&(const Operand& a, const Operand& b);
Value operator|(const Operand& a, const Operand& b);
Value operator^(const Operand& a, const Operand& b);
Value operator<<(const Operand& a, const Operand& b);
Value operator>>(const Operand& a, const Operand& b);
Value operator-(const Operand& x);
Value operator~(const Operand& x);
Value operator!(const Operand& x);

// What `/` means between two integer operands on this thread: kTrue (the default, Python's true
// division, computed in float32) or kTrunc (asc2's: an integer quotient truncated toward zero,
// as C; a zero divisor gives 0 as floordiv does). The asc2 front-end sets kTrunc for the length
// of a trace; set_int_division returns the previous mode so that it can be restored.
enum class IntDivision : std::uint8_t { kTrue, kTrunc };
IntDivision set_int_division(IntDivision mode);
IntDivision int_division();

Value floordiv(const Operand& a, const Operand& b, Loc loc = Loc::current());
Value maximum(const Operand& a, const Operand& b, Loc loc = Loc::current());
Value minimum(const Operand& a, const Operand& b, Loc loc = Loc::current());
Value pow(const Operand& a, const Operand& b, Loc loc = Loc::current());
Value logical_and(const Operand& a, const Operand& b, Loc loc = Loc::current());
Value logical_or(const Operand& a, const Operand& b, Loc loc = Loc::current());
Value logical_not(const Operand& x, Loc loc = Loc::current());
Value where(const Operand& cond, const Operand& a, const Operand& b, Loc loc = Loc::current());

#define TILEOPS_TL_UNARY(name) Value name(const Operand& x, Loc loc = Loc::current());
TILEOPS_TL_UNARY(abs)
TILEOPS_TL_UNARY(ceil)
TILEOPS_TL_UNARY(floor)
TILEOPS_TL_UNARY(round)
TILEOPS_TL_UNARY(trunc)
TILEOPS_TL_UNARY(exp)
TILEOPS_TL_UNARY(exp2)
TILEOPS_TL_UNARY(expm1)
TILEOPS_TL_UNARY(log)
TILEOPS_TL_UNARY(log2)
TILEOPS_TL_UNARY(log1p)
TILEOPS_TL_UNARY(sqrt)
TILEOPS_TL_UNARY(rsqrt)
TILEOPS_TL_UNARY(sin)
TILEOPS_TL_UNARY(cos)
TILEOPS_TL_UNARY(tan)
TILEOPS_TL_UNARY(sinh)
TILEOPS_TL_UNARY(cosh)
TILEOPS_TL_UNARY(tanh)
TILEOPS_TL_UNARY(erf)
TILEOPS_TL_UNARY(sigmoid)
TILEOPS_TL_UNARY(relu)
TILEOPS_TL_UNARY(silu)
TILEOPS_TL_UNARY(softplus)
TILEOPS_TL_UNARY(negative)
TILEOPS_TL_UNARY(reciprocal)
TILEOPS_TL_UNARY(isnan)
TILEOPS_TL_UNARY(isinf)
#undef TILEOPS_TL_UNARY
// gelu: the erf form by default, the tanh approximation with approximate = true.
Value gelu(const Operand& x, bool approximate = false, Loc loc = Loc::current());

// --- reductions and scans ------------------------------------------------------------------
// Over `dims` (all dims when empty: the result is a scalar unless keep_dims). 16-bit inputs
// accumulate in float32 or better; mean needs a float tile; argmax/argmin give int32.
Value reduce(ReduceOp op, const Value& x, const std::vector<int>& dims, bool keep_dims, Loc loc);
Value reduce_sum(const Value& x, const std::vector<int>& dims = {}, bool keep_dims = false,
                 Loc loc = Loc::current());
Value reduce_max(const Value& x, const std::vector<int>& dims = {}, bool keep_dims = false,
                 Loc loc = Loc::current());
Value reduce_min(const Value& x, const std::vector<int>& dims = {}, bool keep_dims = false,
                 Loc loc = Loc::current());
Value reduce_prod(const Value& x, const std::vector<int>& dims = {}, bool keep_dims = false,
                  Loc loc = Loc::current());
Value reduce_mean(const Value& x, const std::vector<int>& dims = {}, bool keep_dims = false,
                  Loc loc = Loc::current());
Value argmax(const Value& x, int dim, bool keep_dims = false, Loc loc = Loc::current());
Value argmin(const Value& x, int dim, bool keep_dims = false, Loc loc = Loc::current());
Value all(const Value& x, const std::vector<int>& dims = {}, bool keep_dims = false,
          Loc loc = Loc::current());
Value any(const Value& x, const std::vector<int>& dims = {}, bool keep_dims = false,
          Loc loc = Loc::current());
Value cumsum(const Value& x, int axis, Loc loc = Loc::current());
// Sorting along `axis` (ascending unless `descending`), stable: equal values keep their order;
// NaN sorts above +inf, -0.0 equals 0.0. sort gives the values, argsort their int32 positions on
// the axis. topk keeps the k largest (or smallest) of each line, in that order, as
// {values, indices}. Not bool tiles.
Value sort(const Value& x, int axis = -1, bool descending = false, Loc loc = Loc::current());
Value argsort(const Value& x, int axis = -1, bool descending = false, Loc loc = Loc::current());
std::pair<Value, Value> topk(const Value& x, std::int64_t k, int axis = -1, bool largest = true,
                             Loc loc = Loc::current());

// --- shape ---------------------------------------------------------------------------------
Value reshape(const Value& x, const Shape& shape, Loc loc = Loc::current());
Value ravel(const Value& x, Loc loc = Loc::current());
Value expand_dims(const Value& x, int axis, Loc loc = Loc::current());
Value squeeze(const Value& x, int axis, Loc loc = Loc::current());
Value broadcast_to(const Value& x, const Shape& shape, Loc loc = Loc::current());
Value transpose(const Value& x, const std::vector<int>& permutation = {}, Loc loc = Loc::current());

// --- built-ins -----------------------------------------------------------------------------
Value softmax(const Value& x, int axis = -1, Loc loc = Loc::current());
// Normalises the last dim; gamma (and beta) are 1-D tiles of its width. Computed in float32 (or
// float64 for float64 x) and rounded to x's dtype.
Value rms_norm(const Value& x, const Value& gamma, double eps, Loc loc = Loc::current());
// mean and rstd are float32 (float64 for float64 x), of x's shape with the last dim kept as 1,
// or removed with keep_dims = false (asc2's form; a 1-D x gives scalars).
struct LayerNorm {
  Value out, mean, rstd;
};
LayerNorm layer_norm(const Value& x, const Value& gamma, const Value& beta, double eps,
                     Loc loc = Loc::current());
LayerNorm layer_norm(const Value& x, const Value& gamma, const Value& beta, double eps,
                     bool keep_dims, Loc loc = Loc::current());

// --- matmul --------------------------------------------------------------------------------
// 2-D tiles [M, K] @ [K, N] (float32/float16/bfloat16/fp8 in, float32 out); bias broadcasts
// to [M, N]. matmul_acc returns acc + a @ b (acc float32 [M, N]).
Value matmul(const Value& a, const Value& b, const Value& bias = Value(), Loc loc = Loc::current());
Value matmul_acc(const Value& acc, const Value& a, const Value& b, Loc loc = Loc::current());

// --- programming model ---------------------------------------------------------------------
Value block_idx(Loc loc = Loc::current());
Value block_num(Loc loc = Loc::current());
Value ceildiv(const Operand& a, const Operand& b, Loc loc = Loc::current());
// Number of tiles of extent `tile` covering dim `axis` of a global tensor.
Value num_tiles(const Value& tensor, int axis, std::int64_t tile, Loc loc = Loc::current());

}  // namespace tileops::tl
