#include "src/ops/cpu/elementwise_loop.h"

#include <algorithm>

#include "tileops/core/checked_size.h"

namespace tileops::ops::cpu {
namespace {

// Below this many elements per thread, waking another thread costs more than it saves.
constexpr std::int64_t kMinElementsPerThread = 16384;

}  // namespace

ElementwiseLoop::ElementwiseLoop(const Dims& shape, const std::array<Dims, kOperands>& strides) {
  // An empty view's extents and strides are unbounded (it reaches no byte): merging them could
  // overflow, and there is nothing to run.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    inner_ = 0;
    return;
  }
  // Merged dims, innermost first. Extent-1 dims are dropped: their strides never matter.
  Dims extents;
  std::array<Dims, kOperands> merged;
  for (int d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    const int last = extents.size() - 1;
    bool mergeable = last >= 0;
    for (int i = 0; i < kOperands && mergeable; ++i) {
      mergeable = strides[i][d] == merged[i][last] * extents[last];
    }
    if (mergeable) {
      extents[last] *= shape[d];
      continue;
    }
    extents.push_back(shape[d]);
    for (int i = 0; i < kOperands; ++i) merged[i].push_back(strides[i][d]);
  }
  if (extents.empty()) return;  // a single element: inner_ = 1, strides 0
  inner_ = extents[0];
  for (int i = 0; i < kOperands; ++i) inner_strides_[i] = merged[i][0];
  for (int k = extents.size() - 1; k >= 1; --k) {
    outer_shape_.push_back(extents[k]);
    for (int i = 0; i < kOperands; ++i) outer_strides_[i].push_back(merged[i][k]);
  }
}

void ElementwiseLoop::run(ThreadPool& pool, BlockFn fn) const {
  const std::int64_t rows = outer_shape_.product();
  if (rows == 0 || inner_ == 0) return;
  const std::int64_t per_row = ceil_div(inner_, kBlock);
  const std::int64_t min_blocks =
      std::max<std::int64_t>(1, kMinElementsPerThread / std::min(inner_, kBlock));
  pool.parallel_range(rows * per_row, min_blocks,
                      [&](int chunk, std::int64_t begin, std::int64_t end) {
                        run_blocks(chunk, begin, end, per_row, fn);
                      });
}

void ElementwiseLoop::run_blocks(int chunk, std::int64_t begin, std::int64_t end,
                                 std::int64_t per_row, BlockFn fn) const {
  // An odometer over the outer dims: offsets advance by strides, no division per row.
  const int rank = outer_shape_.size();
  std::array<std::int64_t, kMaxRank> index{};
  std::array<std::int64_t, kOperands> row{};
  std::int64_t r = begin / per_row;
  for (int k = rank - 1; k >= 0; --k) {
    index[k] = r % outer_shape_[k];
    r /= outer_shape_[k];
    for (int i = 0; i < kOperands; ++i) row[i] += index[k] * outer_strides_[i][k];
  }
  std::int64_t block = begin % per_row;
  for (std::int64_t b = begin; b < end; ++b, ++block) {
    if (block == per_row) {
      block = 0;
      for (int k = rank - 1; k >= 0; --k) {
        for (int i = 0; i < kOperands; ++i) row[i] += outer_strides_[i][k];
        if (++index[k] < outer_shape_[k]) break;
        for (int i = 0; i < kOperands; ++i) row[i] -= index[k] * outer_strides_[i][k];
        index[k] = 0;
      }
    }
    const std::int64_t column = block * kBlock;
    std::int64_t offsets[kOperands];
    for (int i = 0; i < kOperands; ++i) offsets[i] = row[i] + column * inner_strides_[i];
    fn(chunk, offsets, std::min(kBlock, inner_ - column));
  }
}

}  // namespace tileops::ops::cpu
