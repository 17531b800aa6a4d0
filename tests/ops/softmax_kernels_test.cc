// The SIMD kernels under the softmax operators: Exp against std::exp in ulps over the whole
// float32 range where e^x is normal, exact zeros below it, and the row softmax on tails; each
// on every SIMD target this CPU supports (Highway's dispatch mock), not only the best one; and
// the attention kernels' online-softmax step with non-finite scores.
#include "src/ops/cpu/simd/softmax_kernels.h"
#include "src/ops/cpu/simd/softmax_pipeline_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "src/ops/cpu/simd/attention_kernels.h"
#include "tests/support/simd_targets.h"
#include "tileops/core/float16.h"

namespace tileops::ops::cpu {
namespace {

using testing::for_each_simd_target;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Distance in units in the last place between two finite floats of the same sign.
std::int64_t ulp_distance(float a, float b) {
  return std::abs(static_cast<std::int64_t>(std::bit_cast<std::int32_t>(a)) -
                  static_cast<std::int64_t>(std::bit_cast<std::int32_t>(b)));
}

// x from -87.3 (e^x just above FLT_MIN) to 88.7 (just below FLT_MAX): a dense sweep plus random
// points, each within 2 ulp of e^x computed in double and rounded once.
TEST(ExpRow, WithinTwoUlpOfStdExp) {
  for_each_simd_target([] {
    std::vector<float> x;
    for (float v = -87.3f; v <= 88.7f; v += 0.00173f) x.push_back(v);
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> any(-87.3f, 88.7f);
    std::uniform_real_distribution<float> small(-1e-3f, 1e-3f);
    for (int i = 0; i < 100000; ++i) x.push_back(any(rng));
    for (int i = 0; i < 10000; ++i) x.push_back(small(rng));
    x.push_back(0.0f);
    x.push_back(-0.0f);
    std::vector<float> y(x.size());
    exp_row(x.data(), static_cast<std::int64_t>(x.size()), y.data());
    std::int64_t worst = 0;
    float worst_x = 0.0f;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float expected = static_cast<float>(std::exp(static_cast<double>(x[i])));
      ASSERT_TRUE(std::isfinite(y[i])) << "x = " << x[i];
      const std::int64_t d = ulp_distance(y[i], expected);
      if (d > worst) {
        worst = d;
        worst_x = x[i];
      }
      // std::exp in float must agree too (glibc's expf is correctly rounded in practice).
      EXPECT_LE(ulp_distance(y[i], std::exp(x[i])), 2) << "x = " << x[i];
    }
    EXPECT_LE(worst, 2) << "worst at x = " << worst_x;
    EXPECT_EQ(y[x.size() - 2], 1.0f);
    EXPECT_EQ(y[x.size() - 1], 1.0f);
  });
}

// Below -87.3 e^x is subnormal or 0: the kernel returns a tiny non-negative value (never NaN or
// garbage), and exactly 0 from -104 down to -inf.
TEST(ExpRow, VeryNegativeInputsGiveZero) {
  for_each_simd_target([] {
    std::vector<float> x;
    for (float v = -87.4f; v > -104.0f; v -= 0.01f) x.push_back(v);
    const std::size_t subnormal_end = x.size();
    for (const float v : {-104.01f, -105.0f, -150.0f, -1000.0f, -1e20f,
                          -std::numeric_limits<float>::max(), -kInf}) {
      x.push_back(v);
    }
    std::vector<float> y(x.size(), 1.0f);
    exp_row(x.data(), static_cast<std::int64_t>(x.size()), y.data());
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_FALSE(std::isnan(y[i])) << "x = " << x[i];
      EXPECT_GE(y[i], 0.0f) << "x = " << x[i];
      if (i < subnormal_end) {
        EXPECT_LE(std::fabs(y[i] - std::exp(x[i])), std::numeric_limits<float>::min())
            << "x = " << x[i];
      } else {
        EXPECT_EQ(y[i], 0.0f) << "x = " << x[i];
      }
    }
  });
}

// Every tail length goes through the one-vector buffer path; out may alias x.
TEST(ExpRow, TailsAndInPlace) {
  for_each_simd_target([] {
    for (std::int64_t n = 1; n <= 40; ++n) {
      std::vector<float> x(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) x[i] = -3.0f + 0.25f * static_cast<float>(i);
      const std::vector<float> original = x;
      exp_row(x.data(), n, x.data());
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_LE(ulp_distance(x[i], std::exp(original[i])), 2) << "n = " << n << ", i = " << i;
      }
    }
  });
}

// Tails with a negative scale: padding lanes must not leak into the sum.
TEST(SoftmaxRow, TailsWithNegativeScale) {
  for_each_simd_target([] {
    for (std::int64_t n = 1; n <= 40; ++n) {
      std::vector<float> x(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) x[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
      for (const float scale : {-2.0f, 0.0f, 3.0f}) {
        std::vector<float> y(x.size(), -1.0f);
        softmax_row(x.data(), scale, n, y.data());
        double m = -INFINITY;
        for (const float v : x) m = std::max(m, static_cast<double>(scale) * v);
        double sum = 0.0;
        for (const float v : x) sum += std::exp(static_cast<double>(scale) * v - m);
        for (std::int64_t i = 0; i < n; ++i) {
          const double e = std::exp(static_cast<double>(scale) * x[i] - m) / sum;
          EXPECT_NEAR(y[i], e, 2e-6 * e) << "n = " << n << ", scale = " << scale;
        }
      }
    }
  });
}

// The softmax's own exp over its whole domain x <= 0: within 2 ulp of std::exp down to -87.3 (a
// dense sweep, random points and tiny magnitudes), exactly 0 below, NaN kept.
TEST(ExpNonPositiveRow, WithinTwoUlpOfStdExpAndZeroBelow) {
  for_each_simd_target([] {
    std::vector<float> x;
    for (float v = -87.3f; v <= 0.0f; v += 0.00173f) x.push_back(v);
    std::mt19937_64 rng(12);
    std::uniform_real_distribution<float> any(-87.3f, 0.0f);
    std::uniform_real_distribution<float> small(-1e-3f, 0.0f);
    for (int i = 0; i < 100000; ++i) x.push_back(any(rng));
    for (int i = 0; i < 10000; ++i) x.push_back(small(rng));
    x.push_back(-87.3f);
    x.push_back(-0.0f);
    x.push_back(0.0f);
    const std::size_t in_range_end = x.size();
    for (const float v : {-87.31f, -87.4f, -88.0f, -100.0f, -104.01f, -150.0f, -1000.0f, -1e20f,
                          -std::numeric_limits<float>::max(), -kInf}) {
      x.push_back(v);
    }
    x.push_back(std::numeric_limits<float>::quiet_NaN());
    // An odd length, so the tail buffer is exercised too.
    if (x.size() % 2 == 0) x.insert(x.begin(), -1.0f);
    std::vector<float> y(x.size(), -1.0f);
    exp_non_positive_row(x.data(), static_cast<std::int64_t>(x.size()), y.data());
    const std::size_t offset = x.size() - (in_range_end + 11);
    std::int64_t worst = 0;
    float worst_x = 0.0f;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i]));
        continue;
      }
      if (i >= in_range_end + offset) {
        EXPECT_EQ(y[i], 0.0f) << "x = " << x[i];
        continue;
      }
      const float expected = static_cast<float>(std::exp(static_cast<double>(x[i])));
      ASSERT_TRUE(std::isfinite(y[i])) << "x = " << x[i];
      const std::int64_t d = ulp_distance(y[i], expected);
      if (d > worst) {
        worst = d;
        worst_x = x[i];
      }
      EXPECT_LE(ulp_distance(y[i], std::exp(x[i])), 2) << "x = " << x[i];
    }
    EXPECT_LE(worst, 2) << "worst at x = " << worst_x;
  });
}

// Contiguous bfloat16/float16 rows through the fused 16-bit softmax, every length up to 80
// (paired blocks and tails), in place too: the float32 row softmax of the widened input rounded
// once, up to one unit in the last place where the 16-bit path's coarser exp (relative error 3e-6
// for float16, 1.1e-4 for bfloat16) falls on the other side of a rounding boundary, which must stay
// rare (at most 2% of the elements).
TEST(SoftmaxRowPipelined, MatchesFloat32RowRoundedOnce) {
  for_each_simd_target([] {
    std::int64_t compared = 0;
    std::int64_t off_by_one = 0;
    for (const DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
      const bool bf16 = dtype == DataType::kBFloat16;
      for (std::int64_t n = 1; n <= 80; ++n) {
        std::vector<std::uint16_t> x(static_cast<std::size_t>(n));
        std::vector<float> wide(x.size());
        for (std::int64_t i = 0; i < n; ++i) {
          const float v = 0.37f * static_cast<float>((i * 7) % 23) - 4.0f;
          x[i] = bf16 ? float_to_bfloat16(v) : float_to_float16(v);
          wide[i] = bf16 ? bfloat16_to_float(x[i]) : float16_to_float(x[i]);
        }
        for (const float scale : {0.5f, -1.5f}) {
          std::vector<float> expected(x.size());
          softmax_row(wide.data(), scale, n, expected.data());
          std::vector<float> scratch(x.size());
          std::vector<std::uint16_t> y = x;
          softmax_row_pipelined(dtype, y.data(), scale, n, scratch.data(), y.data());
          for (std::int64_t i = 0; i < n; ++i) {
            const std::uint16_t e =
                bf16 ? float_to_bfloat16(expected[i]) : float_to_float16(expected[i]);
            // Probabilities are positive: adjacent codes are adjacent values.
            const int distance = std::abs(static_cast<int>(y[i]) - static_cast<int>(e));
            EXPECT_LE(distance, 1) << "n = " << n << ", i = " << i << ", scale = " << scale;
            off_by_one += distance;
            ++compared;
          }
        }
      }
      // A NaN anywhere makes the whole row NaN.
      std::vector<std::uint16_t> x(37, bf16 ? float_to_bfloat16(1.0f) : float_to_float16(1.0f));
      x[20] = bf16 ? 0x7fc0 : 0x7e00;
      std::vector<float> scratch(x.size());
      std::vector<std::uint16_t> y(x.size());
      softmax_row_pipelined(dtype, x.data(), 1.0f, 37, scratch.data(), y.data());
      for (const std::uint16_t v : y) {
        EXPECT_TRUE(std::isnan(bf16 ? bfloat16_to_float(v) : float16_to_float(v)));
      }
    }
    EXPECT_LE(off_by_one * 50, compared) << off_by_one << " of " << compared << " off by one";
  });
}

// Rows of n equal values, whose softmax is 1/n exactly in float32 (every exp is 2^0 = 1, the sum
// is n): the 16-bit pipelined softmax's store must round 1/n to nearest even, bit for bit, for n
// on both sides of the whole blocks (bfloat16 rounds in floating point, RoundSmallToBF16High).
TEST(SoftmaxRowPipelined, UniformRowsRoundOneOverN) {
  for_each_simd_target([] {
    for (const DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
      const bool bf16 = dtype == DataType::kBFloat16;
      for (std::int64_t n = 1; n <= 300; ++n) {
        std::vector<std::uint16_t> x(static_cast<std::size_t>(n), 0);  // +0.0: exps of exactly 1
        std::vector<std::uint16_t> y(x.size(), 0x7fff);  // NaN: unwritten elements fail
        std::vector<float> scratch(x.size());
        softmax_row_pipelined(dtype, x.data(), 1.3f, n, scratch.data(), y.data());
        const float p = 1.0f / static_cast<float>(n);
        const std::uint16_t expected = bf16 ? float_to_bfloat16(p) : float_to_float16(p);
        for (std::int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(y[i], expected)
              << (bf16 ? "bfloat16" : "float16") << " n = " << n << ", i = " << i;
        }
      }
    }
  });
}

// A run of rows through the pipelined 16-bit softmax (each row stored during the next row's exp
// pass) equals each row on its own, bit for bit: rows of every length class (shorter and longer
// than their neighbours, tails, one element), a NaN row and an all -inf row between finite ones,
// out of place and in place.
TEST(SoftmaxRowsPipelined, RunOfRowsEqualsEachRowAlone) {
  for_each_simd_target([] {
    const std::vector<std::int64_t> lengths = {1, 5,  16, 17, 33,  64, 100,
                                               3, 80, 47, 48, 129, 2,  200};
    constexpr std::size_t kNaNRow = 5, kMinusInfRow = 8;
    for (const DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
      const bool bf16 = dtype == DataType::kBFloat16;
      const auto code = [&](float v) { return bf16 ? float_to_bfloat16(v) : float_to_float16(v); };
      std::mt19937 rng(7);
      std::normal_distribution<float> normal(0.0f, 3.0f);
      std::vector<std::vector<std::uint16_t>> x(lengths.size());
      std::int64_t width = 0;
      for (std::size_t r = 0; r < lengths.size(); ++r) {
        width = std::max(width, lengths[r]);
        for (std::int64_t i = 0; i < lengths[r]; ++i) x[r].push_back(code(normal(rng)));
      }
      x[kNaNRow][3] = code(std::numeric_limits<float>::quiet_NaN());
      std::fill(x[kMinusInfRow].begin(), x[kMinusInfRow].end(), code(-kInf));
      std::vector<std::vector<std::uint16_t>> expected(x.size());
      std::vector<float> scratch(2 * static_cast<std::size_t>(width));
      for (std::size_t r = 0; r < x.size(); ++r) {
        expected[r].resize(x[r].size());
        softmax_row_pipelined(dtype, x[r].data(), 0.7f, lengths[r], scratch.data(),
                              expected[r].data());
      }
      for (const bool in_place : {false, true}) {
        std::vector<std::vector<std::uint16_t>> y = x;
        if (!in_place) {
          for (auto& row : y)
            std::fill(row.begin(), row.end(), code(std::numeric_limits<float>::quiet_NaN()));
        }
        std::vector<PipelinedRow> rows;
        for (std::size_t r = 0; r < x.size(); ++r) {
          rows.push_back({in_place ? y[r].data() : x[r].data(), y[r].data(), lengths[r]});
        }
        softmax_rows_pipelined(dtype, rows.data(), static_cast<std::int64_t>(rows.size()), 0.7f,
                               scratch.data(), false);
        for (std::size_t r = 0; r < x.size(); ++r) {
          EXPECT_EQ(y[r], expected[r]) << "row " << r << (in_place ? ", in place" : "");
        }
        for (std::size_t r : {kNaNRow, kMinusInfRow}) {
          for (const std::uint16_t v : y[r]) {
            EXPECT_TRUE(std::isnan(bf16 ? bfloat16_to_float(v) : float16_to_float(v))) << r;
          }
        }
      }
    }
  });
}

// A run of float32 rows through the pipeline against the softmax in float64: rows of every
// length class (tails, one element, shorter and longer than their neighbours), scales of both
// signs, a NaN row and an all -inf row between finite ones, out of place (poisoned outputs) and
// in place. Tolerance: Exp2Fine's 1e-7 and the sum's, plus the argument's: y = x·(scale·log2 e) −
// max·log2 e carries the roundings of both products and of the difference, ~|y|·ln2·2^-23 for
// |y| up to ~40 here (3.1e-6 measured; the three-pass float32 row: 1.9e-6), well under the
// operators' 2e-5.
TEST(SoftmaxRowsPipelined, Float32MatchesFloat64) {
  for_each_simd_target([] {
    const std::vector<std::int64_t> lengths = {1, 5,  16, 17, 33,  64, 100,
                                               3, 80, 47, 48, 129, 2,  200};
    constexpr std::size_t kNaNRow = 5, kMinusInfRow = 8;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    std::vector<std::vector<float>> x(lengths.size());
    std::int64_t width = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      width = std::max(width, lengths[r]);
      for (std::int64_t i = 0; i < lengths[r]; ++i) x[r].push_back(normal(rng));
    }
    x[kNaNRow][3] = std::numeric_limits<float>::quiet_NaN();
    std::fill(x[kMinusInfRow].begin(), x[kMinusInfRow].end(), -kInf);
    std::vector<float> scratch(2 * static_cast<std::size_t>(width));
    for (const float scale : {0.7f, -1.3f}) {
      for (const bool in_place : {false, true}) {
        std::vector<std::vector<float>> y = x;
        if (!in_place) {
          for (auto& row : y) std::fill(row.begin(), row.end(), 1e30f);
        }
        std::vector<PipelinedRow> rows;
        for (std::size_t r = 0; r < x.size(); ++r) {
          rows.push_back({in_place ? y[r].data() : x[r].data(), y[r].data(), lengths[r]});
        }
        softmax_rows_pipelined(DataType::kFloat32, rows.data(),
                               static_cast<std::int64_t>(rows.size()), scale, scratch.data(),
                               false);
        for (std::size_t r = 0; r < x.size(); ++r) {
          if (r == kNaNRow || r == kMinusInfRow) {
            for (const float v : y[r]) EXPECT_TRUE(std::isnan(v)) << "row " << r;
            continue;
          }
          double m = -std::numeric_limits<double>::infinity();
          for (const float v : x[r]) m = std::max(m, static_cast<double>(scale) * v);
          double sum = 0;
          for (const float v : x[r]) sum += std::exp(static_cast<double>(scale) * v - m);
          for (std::size_t i = 0; i < x[r].size(); ++i) {
            const double e = std::exp(static_cast<double>(scale) * x[r][i] - m) / sum;
            EXPECT_NEAR(y[r][i], e, 5e-6 * e + 1e-37)
                << "row " << r << ", i = " << i << ", scale = " << scale
                << (in_place ? ", in place" : "");
          }
        }
      }
    }
  });
}

// Rows whose exp needs its clamp at -127 (the pipeline skips it for rows whose scaled values all
// lie within 83 of each other, with a max of at most 2^20), between rows that do not: values 300
// below the rest, -inf entries among finite ones, and values near 3·10^6 spaced by 2^16, against
// the softmax in float64: float32 within the tolerance of Float32MatchesFloat64, bfloat16 within
// one unit of it rounded once, and exactly 0 below 1e-40.
TEST(SoftmaxRowsPipelined, WideRowsTakeTheClampedExp) {
  for_each_simd_target([] {
    constexpr std::int64_t kWidth = 67;  // whole blocks and a tail on every target
    std::mt19937 rng(13);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<std::vector<float>> x(8);
    for (auto& row : x) {
      for (std::int64_t i = 0; i < kWidth; ++i) row.push_back(normal(rng));
    }
    for (std::int64_t i = 0; i < kWidth; i += 3) x[1][i] -= 300.0f;
    for (std::int64_t i = 1; i < kWidth; i += 4) x[2][i] = -kInf;
    for (std::int64_t i = 0; i < kWidth; ++i) x[3][i] = 3.0e6f + 65536.0f * std::round(x[3][i]);
    // Rows of a large max, where max·log2 e rounds by more than the exp's range (these read NaN).
    for (std::int64_t i = 0; i < kWidth; ++i) {
      x[5][i] = 1.0e10f;
      x[6][i] = -1.0e10f + 1024.0f * std::round(x[6][i]);
      x[7][i] = 3.0e38f;
    }
    // A negative scale finds the row's min (the anchor of the exp pass on targets without FMA).
    for (const auto& [scale, dtype] :
         {std::pair{1.0f, DataType::kFloat32}, std::pair{1.0f, DataType::kBFloat16},
          std::pair{-1.0f, DataType::kFloat32}, std::pair{-1.0f, DataType::kBFloat16}}) {
      const bool bf16 = dtype == DataType::kBFloat16;
      std::vector<std::vector<float>> xs = x;  // row 2's -inf entries stay -inf once scaled
      if (scale < 0.0f) {
        for (float& v : xs[2]) v = std::isinf(v) ? -v : v;
      }
      std::vector<std::vector<std::uint16_t>> x16(x.size()), y16(x.size());
      std::vector<std::vector<float>> wide = xs, y(x.size());
      std::vector<PipelinedRow> rows;
      for (std::size_t r = 0; r < x.size(); ++r) {
        for (std::int64_t i = 0; i < kWidth; ++i) {
          x16[r].push_back(float_to_bfloat16(xs[r][i]));
          if (bf16) wide[r][i] = bfloat16_to_float(x16[r][i]);
        }
        y[r].assign(kWidth, std::numeric_limits<float>::quiet_NaN());  // unwritten ones fail
        y16[r].assign(kWidth, 0x7fc0);
        rows.push_back(bf16 ? PipelinedRow{x16[r].data(), y16[r].data(), kWidth}
                            : PipelinedRow{xs[r].data(), y[r].data(), kWidth});
      }
      std::vector<float> scratch(2 * kWidth);
      softmax_rows_pipelined(dtype, rows.data(), static_cast<std::int64_t>(rows.size()), scale,
                             scratch.data(), false);
      for (std::size_t r = 0; r < x.size(); ++r) {
        double m = -std::numeric_limits<double>::infinity();
        for (const float v : wide[r]) m = std::max(m, static_cast<double>(scale * v));
        double sum = 0;
        for (const float v : wide[r]) sum += std::exp(static_cast<double>(scale * v) - m);
        for (std::int64_t i = 0; i < kWidth; ++i) {
          const double e = std::exp(static_cast<double>(scale * wide[r][i]) - m) / sum;
          if (!bf16) {
            EXPECT_NEAR(y[r][i], e, 5e-6 * e + 1e-37)
                << "scale " << scale << ", row " << r << ", i = " << i;
            continue;
          }
          const float got = bfloat16_to_float(y16[r][i]);
          if (e < 1e-40) {
            EXPECT_EQ(got, 0.0f) << "scale " << scale << ", row " << r << ", i = " << i
                                 << ", p = " << e;
            continue;
          }
          const int distance = std::abs(static_cast<int>(y16[r][i]) -
                                        static_cast<int>(float_to_bfloat16(static_cast<float>(e))));
          EXPECT_LE(distance, 1) << "scale " << scale << ", row " << r << ", i = " << i
                                 << ", p = " << e;
        }
      }
    }
  });
}

TEST(ScaledMax, PropagatesNaNAnywhere) {
  for_each_simd_target([] {
    for (std::int64_t n : {1, 5, 8, 16, 33}) {
      for (std::int64_t at = 0; at < n; ++at) {
        std::vector<float> x(static_cast<std::size_t>(n), 1.0f);
        x[at] = std::numeric_limits<float>::quiet_NaN();
        EXPECT_TRUE(std::isnan(scaled_max(x.data(), 1.0f, n))) << "n = " << n << ", at = " << at;
      }
    }
    const float inf_row[] = {1.0f, kInf};
    EXPECT_TRUE(std::isnan(scaled_max(inf_row, 0.0f, 2)));  // 0 · inf
    EXPECT_EQ(scaled_max(inf_row, -1.0f, 2), -1.0f);
  });
}

// The online-softmax step of the attention kernels: a max that drops NaN must not turn a row
// into a masked one. Rows: all -inf (masked: zeros, l stays 0, corr 1), -inf and one NaN, finite
// and a NaN in the tail, all NaN, finite and a +inf, finite; then a finite step after it: the
// NaN rows' l stays NaN, the others are finite. Both forms, every SIMD target.
TEST(AttentionSoftmaxTile, NonFiniteScoresReachTheSums) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr std::int64_t kRows = 6, kCols = 37, kLd = 40, kPCols = 64;
  for_each_simd_target([&] {
    for (const bool bf16 : {false, true}) {
      SCOPED_TRACE(bf16 ? "bfloat16 P" : "float32 P");
      std::mt19937_64 rng(5);
      std::uniform_real_distribution<float> any(-3.0f, 3.0f);
      std::vector<float> s(kRows * kLd);
      for (float& x : s) x = any(rng);
      std::fill(s.begin(), s.begin() + 2 * kLd, -kInf);
      s[kLd + 20] = kNaN, s[2 * kLd + 36] = kNaN;
      std::fill(s.begin() + 3 * kLd, s.begin() + 4 * kLd, kNaN);
      s[4 * kLd + 3] = kInf;
      std::vector<float> m(kRows, -kInf), l(kRows, 0.0f), corr(kRows, -1.0f);
      std::vector<std::uint16_t> p(16 * kPCols, 0xffff);
      const auto step = [&](std::vector<float> scores) {
        if (bf16) {
          attention_softmax_tile_bf16(scores.data(), kLd, kRows, kCols, 0.5f, m.data(), l.data(),
                                      corr.data(), p.data(), kPCols);
        } else {
          attention_softmax_tile(scores.data(), kLd, kRows, kCols, m.data(), l.data(), corr.data());
        }
        return scores;
      };
      const std::vector<float> out = step(s);
      EXPECT_EQ(m[0], -kInf);
      EXPECT_EQ(l[0], 0.0f);
      EXPECT_EQ(corr[0], 1.0f);
      if (!bf16) {
        for (std::int64_t j = 0; j < kCols; ++j) EXPECT_EQ(out[j], 0.0f) << j;
      }
      for (std::int64_t r = 1; r <= 4; ++r) EXPECT_TRUE(std::isnan(l[r])) << "row " << r;
      EXPECT_TRUE(std::isfinite(l[5]) && l[5] >= 1.0f) << l[5];
      std::vector<float> finite(kRows * kLd);
      for (float& x : finite) x = any(rng);
      step(finite);
      EXPECT_TRUE(std::isfinite(l[0]) && l[0] >= 1.0f) << l[0];
      for (std::int64_t r = 1; r <= 4; ++r) EXPECT_TRUE(std::isnan(l[r])) << "row " << r;
      EXPECT_TRUE(std::isfinite(l[5])) << l[5];
    }
  });
}

}  // namespace
}  // namespace tileops::ops::cpu
