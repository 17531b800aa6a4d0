// The cpu code generator's plan: everything it decides about a kernel, from the IR alone, before
// any code is printed. Passes, run in this order by plan_kernel (plan.cc), each in its own file:
//   plan_values.cc  uses and users of each value, loop-carried values, where fusion chains end;
//   plan_loads.cc   per load: kept 16-bit (widened where read), read in place or copied (and the
//                   tensors whose overlap a run-time check excludes), row stride, next-tile cursor;
//   plan_fusion.cc  which elementwise values are fused into their consumer (never stored), and
//                   which 16-bit tiles a 64-lane loop reads as float32 blocks;
//   plan_sinks.cc   per elementwise result: the operand it overwrites, the row sum its loop
//                   computes on the way, the store its loop writes directly; the matmul_acc
//                   accumulators added into in place;
//   plan_hints.cc   per tl::prefetch hint: the lanes of the loops that advance it.
// The Emitter (emitter.h) prints the plan and decides nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tileops/tl/ir.h"

namespace tileops::tl::cpu {

struct ValuePlan {
  // Use analysis (plan_values.cc).
  const Op* def = nullptr;              // the op defining the value (nullptr for arguments)
  int uses = 0;                         // operand and yield uses
  const Op* last_user = nullptr;        // the last op using it
  std::vector<const Op*> users;         // every op using it, once per operand
  const Region* user_region = nullptr;  // the region of its last use
  // Every use is an elementwise op of its size in one region, which may each evaluate a cheap
  // expression of it instead of reading a materialised tile.
  bool elementwise_uses = false;
  bool carried = false;  // a loop-carried region argument
  // Some use reads it by name (not element by element): it must be a compute-typed array.
  bool raw_use = false;
  // The value whose loop evaluates this elementwise value when every op using it, and every op
  // using those, is fused: following same-size elementwise uses in one region while they lead
  // to a single value. The value itself when they do not (or when it has a use of another kind).
  int fusion_root = -1;
  // A loop-carried tile used only once: the op using it may overwrite it in place.
  bool consumable = false;
  // A `full` tile used only as a loop's initial value: the loop fills its own tile instead.
  bool fills_loop = false;
  // A 2-D transpose whose only use is the left operand of a float matmul: not materialised; the
  // matmul reads its operand (a float array, raw_use) transposed, at that tile's row stride.
  bool transposed_lhs = false;
  // Every element is >= 0 or NaN by construction (exp, exp2): its row sums may add blocks in
  // float32 with a bounded relative error. (Squares qualify as well, but rms_norm, which agrees
  // with the interpreter bit for bit in practice with a double sum, then drifts by up to 3 ulps;
  // under fast_math every sum takes float32 accumulators: tl_sum64.)
  bool nonnegative = false;

  // A bfloat16 tile held as its bits (u16) and read by name: a load, a reshape of one or a concat
  // of such loads, whose every use is an operand of a bfloat16 matmul (the runtime's kernels take
  // the bits: VDPBF16PS reads them unpacked), a reshape or a concat held as bits in turn.
  bool bits = false;

  // Loads (plan_loads.cc). A 16-bit float tile every use reads element by element stays in its
  // memory type (u16): each read widens it, so the conversion runs in the consumer's loop.
  bool widened = false;
  // The tile may be read in place (a pointer into the tensor) when, at run time, it lies inside
  // the tensor contiguously and no tensor in `overlap_checks` (those stored to while it is live)
  // overlaps the loaded one; else it is copied.
  bool read_in_place = false;
  std::vector<int> overlap_checks;
  // A float32 (or bfloat16 bits) matmul operand read in place at any row stride (matmul_acc
  // takes both operands' strides).
  bool any_row_stride = false;
  // Inside a loop: a cursor prefetches the next iteration's tile (a kernel with tl::prefetch
  // hints, small tiles and tiles whose rows may lie apart have none).
  bool next_tile_cursor = false;
  // Inside a loop, a copied tile (not in place, or not lying in place at run time): while each
  // row is copied, the same row of the next iteration's tile is prefetched, its origin
  // extrapolated from this iteration's and the previous one's (rows far apart: a [K, N] slice
  // of a wide matrix, which no hardware prefetcher follows). Not where the kernel places
  // tl::prefetch hints, nor for small tiles.
  bool next_rows_prefetch = false;

  // Fusion (plan_fusion.cc): an elementwise value evaluated in its consumer's loop, never stored.
  bool fused = false;

  // Sinks (plan_sinks.cc), for an elementwise result computed in its own flat loop.
  int in_place_operand = -1;          // the operand tile it overwrites (consumable), or -1
  const Op* summed = nullptr;         // the row sum (or mean) of it the loop computes
  bool computed_by_producer = false;  // this reduction is computed in its operand's loop
  const Op* sunk_store = nullptr;     // the store the loop writes straight to memory
  // A matmul_acc's accumulator made in the same region for that use alone: the product adds into
  // its array (no copy).
  bool accumulated_in_place = false;
};

struct KernelPlan {
  std::vector<ValuePlan> values;  // indexed by value id
  // Per tl::prefetch op: the lanes of all the loops in its scope that advance its cursor (the
  // larger branch of an if), over which its fetch is spread (plan_hints.cc). Hints that no
  // counted loop advances are absent.
  std::map<const Op*, std::int64_t> hint_work;
  const ValuePlan& at(int id) const { return values[static_cast<std::size_t>(id)]; }
};

// Every planning pass in order.
KernelPlan plan_kernel(const Function& function);

// The passes (each reads the records of those before it).
std::vector<ValuePlan> plan_values(const Function& function);
void plan_loads(const Function& function, std::vector<ValuePlan>& values);
void plan_fusion(const Function& function, std::vector<ValuePlan>& values);
void plan_sinks(const Function& function, std::vector<ValuePlan>& values);
std::map<const Op*, std::int64_t> plan_hints(const Function& function,
                                             const std::vector<ValuePlan>& values);

// The run length when reduction `reduce` reduces contiguous trailing runs of a float tile with a
// multi-accumulator loop (sum, mean, max, min), else 0.
std::int64_t suffix_run(const Function& function, const Op& reduce);

// How a flat loop over a tile of type `result` reads operand `id` at its counter: at the counter
// itself (same elements in the same order, or a scalar), at element 0 (a one-element tile), or
// not at all (it needs strided indexing).
enum class FlatRead { kSame, kFirst, kStrided };
FlatRead flat_read(const Function& function, int id, const Type& result);
// Whether every operand of `o` is read flat (the op is one loop over its result).
bool is_flat(const Function& function, const Op& o);

// The widened tiles that the expression of `id` (or of op `o`'s element) reads at the lane index
// of a 64-lane loop: that loop reads them as float32 blocks, filled first (tl_widen64).
// bfloat16 tiles first, each kind in the order the expression reads them.
std::vector<int> lane_blocks(const Function& function, const std::vector<ValuePlan>& values,
                             int id);
std::vector<int> lane_blocks_of_op(const Function& function, const std::vector<ValuePlan>& values,
                                   const Op& o);

// The cache lines a loop taking `lanes` of `work` lanes per step fetches of a hinted tile of
// `bytes` per step: its share of the tile, 1 to 4 lines.
std::int64_t hint_lines(std::int64_t bytes, std::int64_t lanes, std::int64_t work);

}  // namespace tileops::tl::cpu
