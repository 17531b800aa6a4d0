// The native GEMM's building blocks on their own: the transposes that pack row-major A strips
// and a linear's weight (8 × 8 and 4 × 4 register blocks and their element-wise edges, on every
// SIMD target).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

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

}  // namespace
}  // namespace tileops::ops::cpu
