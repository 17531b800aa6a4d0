// ElementwiseLoop: the iteration of out = f(a, b) over out's shape, a and b viewed with out's
// rank (stride 0 where they broadcast). Dims that are contiguous with their inner neighbour in
// all three operands are merged, then the (merged) last dim is cut into blocks of at most
// kBlock elements and the blocks are spread over the thread pool — across rows and within a
// row, so one long row (a 1-D tensor, a [1, N] tensor) still uses every thread.
#pragma once

#include <array>
#include <cstdint>

#include "tileops/core/dims.h"
#include "tileops/runtime/function_ref.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {

class ElementwiseLoop {
 public:
  static constexpr std::int64_t kBlock = 2048;
  static constexpr int kOperands = 3;  // a, b, out

  // strides[i]: operand i's strides aligned to `shape` (out's shape), 0 where it broadcasts.
  ElementwiseLoop(const Dims& shape, const std::array<Dims, kOperands>& strides);

  // Stride of the merged last dim in operand i.
  std::int64_t inner_stride(int operand) const { return inner_strides_[operand]; }
  std::int64_t inner_extent() const { return inner_; }
  // Stride of operand i between consecutive rows (the innermost merged dim but the last); 0
  // when there is a single row.
  std::int64_t row_stride(int operand) const {
    return outer_strides_[operand].empty() ? 0 : outer_strides_[operand].back();
  }

  // Calls fn(chunk, offsets, n) for every block of n consecutive elements along the last dim;
  // offsets[i] is the element offset of the block's first element in operand i, and
  // chunk < pool.num_threads() indexes per-thread scratch.
  using BlockFn = FunctionRef<void(int, const std::int64_t*, std::int64_t)>;
  void run(ThreadPool& pool, BlockFn fn) const;

 private:
  // Blocks [begin, end) of the row-major (row, block-in-row) numbering.
  void run_blocks(int chunk, std::int64_t begin, std::int64_t end, std::int64_t per_row,
                  BlockFn fn) const;

  Dims outer_shape_;  // the merged dims but the last
  std::array<Dims, kOperands> outer_strides_;
  std::int64_t inner_ = 1;
  std::array<std::int64_t, kOperands> inner_strides_{};
};

}  // namespace tileops::ops::cpu
