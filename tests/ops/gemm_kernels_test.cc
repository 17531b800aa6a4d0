// The native GEMM's building blocks on their own: the transposes that pack row-major A strips
// and a linear's weight (8 × 8 and 4 × 4 register blocks and their element-wise edges, on every
// SIMD target), and the row blocks that share a panel out among the threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "src/ops/cpu/gemm/blocking.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "tests/support/simd_targets.h"

namespace tileops::ops::cpu {
namespace {

// Rows of every remainder against 8- and 4-row blocks, counts of every remainder against 8 and 4
// columns; `ld` leaves gaps that must stay poisoned.
TEST(GemmKernels, TransposeRowsMovesEveryElementOnce) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  testing::for_each_simd_target([&] {
    for (const std::int64_t n_rows : {1, 3, 4, 8, 13, 24}) {
      for (const std::int64_t count : {1, 7, 8, 19}) {
        SCOPED_TRACE(::testing::Message() << "rows=" << n_rows << " count=" << count);
        const std::int64_t stride = count + 5, ld = n_rows + 3;
        std::vector<float> src(static_cast<std::size_t>(n_rows * stride));
        for (float& v : src) v = dist(rng);
        std::vector<const float*> rows;
        for (std::int64_t r = 0; r < n_rows; ++r) rows.push_back(src.data() + r * stride);
        std::vector<float> out(static_cast<std::size_t>(count * ld), std::nanf(""));
        gemm_transpose_rows(rows.data(), n_rows, count, out.data(), ld);
        for (std::int64_t p = 0; p < count; ++p) {
          for (std::int64_t r = 0; r < ld; ++r) {
            const float got = out[static_cast<std::size_t>(p * ld + r)];
            if (r < n_rows) {
              ASSERT_EQ(got, src[static_cast<std::size_t>(r * stride + p)])
                  << "p=" << p << " r=" << r;
            } else {
              ASSERT_TRUE(std::isnan(got)) << "gap written at p=" << p << " r=" << r;
            }
          }
        }
      }
    }
  });
}

// The tasks cover every row once, no block exceeds mc, blocks differ by at most one step, and
// their count is a multiple of the threads (or each block is split among them).
TEST(GemmKernels, RowBlocksShareRowsEvenly) {
  for (const std::int64_t m : {1, 7, 8, 33, 100, 257, 2048, 3100}) {
    for (const int threads : {1, 2, 3}) {
      for (const std::int64_t step : {8, 32}) {
        SCOPED_TRACE(::testing::Message()
                     << "m=" << m << " threads=" << threads << " step=" << step);
        const RowBlocks plan(m, threads, 96, step);
        std::vector<int> seen(static_cast<std::size_t>(m), 0);
        std::int64_t smallest = m, largest = 0;
        for (std::int64_t t = 0; t < plan.tasks(); t += plan.n_split) {
          const RowBlocks::Task task = plan.task(t, m, 10);
          EXPECT_EQ(task.i0 % step, 0);
          EXPECT_LE(task.rows, plan.mc);
          for (std::int64_t i = task.i0; i < task.i0 + task.rows; ++i) {
            ++seen[static_cast<std::size_t>(i)];
          }
          if (task.i0 + task.rows < m) smallest = std::min(smallest, task.rows);
          largest = std::max(largest, task.rows);
        }
        for (std::int64_t i = 0; i < m; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)], 1) << i;
        if (plan.blocks > 1) {
          EXPECT_LE(largest - smallest, step);
        }
        EXPECT_TRUE(plan.blocks % threads == 0 || plan.n_split == threads);
      }
    }
  }
}

}  // namespace
}  // namespace tileops::ops::cpu
