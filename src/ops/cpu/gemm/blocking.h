// How the packed engines (native_gemm.cc, amx_gemm.cc) share a column panel out among the
// threads: the panel's packing as (K block, strip) pairs, then row blocks that each walk all of K.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tileops/core/checked_size.h"

namespace tileops::ops::cpu {

// Row blocks of at most max_rows rows (a multiple of `step`), as many as a multiple of the
// thread count where the rounding allows; otherwise each block is also split into `threads`
// parts of the panel's strips, so that every thread has work.
struct RowBlocks {
  std::int64_t mc = 0, blocks = 0, n_split = 1, step = 1;

  RowBlocks(std::int64_t m, int threads, std::int64_t max_rows, std::int64_t step_rows)
      : step(step_rows) {
    const std::int64_t want = std::max<std::int64_t>(1, ceil_div(m, max_rows));
    const std::int64_t m_blocks = ceil_div(want, threads) * threads;
    const auto rows_for = [&](std::int64_t b) { return ceil_div(ceil_div(m, b), step) * step; };
    // Rounding to `step` can leave a count the threads cannot share (2048 rows, 2 threads, step
    // 32: 11 blocks of 192; each block would be split, its A block packed by both threads): up to
    // twice as many smaller blocks are taken if their count divides evenly.
    mc = rows_for(m_blocks);
    for (std::int64_t b = m_blocks; b <= 2 * m_blocks; b += threads) {
      if (ceil_div(m, rows_for(b)) % threads == 0) {
        mc = rows_for(b);
        break;
      }
    }
    blocks = ceil_div(m, mc);
    n_split = blocks % threads == 0 ? 1 : threads;
  }

  std::int64_t tasks() const { return blocks * n_split; }

  // Task t: rows [i0, i0 + rows) × strips [t0, t1) of n_strips (t0 == t1: nothing to do). The
  // blocks share the rows' steps out evenly (at most mc rows each) rather than mc at a time with
  // the rest last: 2048 rows in 22 blocks of 96 left a block of 32, so that one of two threads
  // ran 1056 rows and the other 992 before the panel's barrier.
  struct Task {
    std::int64_t i0, rows, t0, t1;
  };
  Task task(std::int64_t t, std::int64_t m, std::int64_t n_strips) const {
    const std::int64_t part = t % n_split, block = t / n_split;
    const std::int64_t steps = ceil_div(m, step), each = steps / blocks, extra = steps % blocks;
    // Block b starts at step b·each + min(b, extra): the first `extra` blocks take one more.
    const auto start = [&](std::int64_t b) { return b * each + std::min(b, extra); };
    const std::int64_t i0 = start(block) * step;
    const std::int64_t i1 = std::min(m, start(block + 1) * step);
    return {i0, i1 - i0, part * n_strips / n_split, (part + 1) * n_strips / n_split};
  }
};

// Calls pack(kb, t0, t1) for the (K block, strip) pairs [begin, end) of a panel of n_strips
// strips per K block: one call per run of strips within a K block.
template <class Pack>
void for_each_panel_run(std::int64_t begin, std::int64_t end, std::int64_t n_strips, Pack&& pack) {
  for (std::int64_t task = begin; task < end;) {
    const std::int64_t kb = task / n_strips;
    const std::int64_t stop = std::min(end, (kb + 1) * n_strips);
    pack(kb, task - kb * n_strips, stop - kb * n_strips);
    task = stop;
  }
}

}  // namespace tileops::ops::cpu
