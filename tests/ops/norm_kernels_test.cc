// The fused row kernels of ops/cpu/simd/norm_kernels.h on every SIMD target this build
// dispatches to that the CPU supports, for float32, float16 and bfloat16 rows that start
// unaligned and have every tail length up to several vectors. Stored values must equal the
// scalar float32 computation rounded once by core/float16.h, bit for bit (NaN payloads
// included); sums of squares must match a float64 reference; nothing past a row is written.
#include "src/ops/cpu/simd/norm_kernels.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/simd_targets.h"
#include "tileops/core/float16.h"

namespace tileops::ops::cpu {
namespace {

using testing::for_each_simd_target;

// A row of one dtype held as raw bits, one element per std::uint32_t for simplicity; packed()
// lays it out as the dtype, one element of padding in front so that it starts unaligned.
struct Row {
  DataType dtype;
  std::vector<std::uint32_t> bits;

  float at(std::size_t i) const {
    switch (dtype) {
      case DataType::kFloat16:
        return float16_to_float(static_cast<std::uint16_t>(bits[i]));
      case DataType::kBFloat16:
        return bfloat16_to_float(static_cast<std::uint16_t>(bits[i]));
      default:
        return std::bit_cast<float>(bits[i]);
    }
  }
};

std::uint32_t round_to(DataType dtype, float v) {
  switch (dtype) {
    case DataType::kFloat16:
      return float_to_float16(v);
    case DataType::kBFloat16:
      return float_to_bfloat16(v);
    default:
      return std::bit_cast<std::uint32_t>(v);
  }
}

// Bytes of a row: one padding element, the row, then 8 sentinel elements of 0xAB bytes.
std::vector<unsigned char> packed(const Row& row) {
  const std::size_t size = size_of(row.dtype);
  std::vector<unsigned char> bytes((row.bits.size() + 9) * size, 0xAB);
  for (std::size_t i = 0; i < row.bits.size(); ++i) {
    std::memcpy(bytes.data() + (i + 1) * size, &row.bits[i], size);  // little-endian
  }
  return bytes;
}

std::uint32_t element(const std::vector<unsigned char>& bytes, DataType dtype, std::size_t i) {
  std::uint32_t v = 0;
  std::memcpy(&v, bytes.data() + (i + 1) * size_of(dtype), size_of(dtype));
  return v;
}

void expect_sentinels(const std::vector<unsigned char>& bytes, DataType dtype, std::size_t n) {
  for (std::size_t b = 0; b < size_of(dtype); ++b) EXPECT_EQ(bytes[b], 0xAB);
  for (std::size_t b = (n + 1) * size_of(dtype); b < bytes.size(); ++b) EXPECT_EQ(bytes[b], 0xAB);
}

Row random_row(DataType dtype, std::size_t n, std::mt19937_64& rng, bool specials) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_int_distribution<int> pick(0, 15);
  Row row{dtype, {}};
  for (std::size_t i = 0; i < n; ++i) {
    float v = normal(rng);
    if (specials) {
      const int k = pick(rng);
      if (k == 0) v = std::numeric_limits<float>::quiet_NaN();
      if (k == 1) v = -std::numeric_limits<float>::infinity();
      if (k == 2) v = 6.0e4f;  // float16 overflows when added to itself
    }
    row.bits.push_back(round_to(dtype, v));
  }
  return row;
}

std::vector<std::size_t> widths() {
  std::vector<std::size_t> n;
  for (std::size_t i = 0; i <= 70; ++i) n.push_back(i);
  n.push_back(4097);
  return n;
}

constexpr DataType kDtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

// A float32 sum of n non-negative terms, in any order, is within n·2⁻²⁴ of the exact sum
// (relative), plus the rounding of each square.
void expect_sum_near(float got, double expected, std::size_t n) {
  EXPECT_NEAR(got, expected, static_cast<double>(n + 1) * 0x1p-24 * expected) << "n = " << n;
}

TEST(NormKernels, RowSumOfSquaresMatchesFloat64) {
  for_each_simd_target([] {
    std::mt19937_64 rng(3);
    for (const DataType dtype : kDtypes) {
      for (const std::size_t n : widths()) {
        const Row x = random_row(dtype, n, rng, false);
        const auto bytes = packed(x);
        double expected = 0.0;
        for (std::size_t i = 0; i < n; ++i) expected += static_cast<double>(x.at(i)) * x.at(i);
        const float got =
            row_sum_of_squares(bytes.data() + size_of(dtype), dtype, static_cast<std::int64_t>(n));
        expect_sum_near(got, expected, n);
      }
    }
  });
}

TEST(NormKernels, AddRowsRoundsOnceAndSumsTheRoundedSquares) {
  for_each_simd_target([] {
    std::mt19937_64 rng(5);
    for (const DataType dtype : kDtypes) {
      for (const std::size_t n : widths()) {
        for (const bool specials : {false, true}) {
          const Row a = random_row(dtype, n, rng, specials);
          const Row b = random_row(dtype, n, rng, specials);
          const auto a_bytes = packed(a);
          const auto b_bytes = packed(b);
          auto sum = packed(Row{dtype, std::vector<std::uint32_t>(n, 0)});
          const std::size_t size = size_of(dtype);
          const float got =
              add_rows_sum_of_squares(a_bytes.data() + size, b_bytes.data() + size, dtype,
                                      static_cast<std::int64_t>(n), sum.data() + size);
          double expected = 0.0;
          for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t want = round_to(dtype, a.at(i) + b.at(i));
            ASSERT_EQ(element(sum, dtype, i), want) << "n = " << n << ", i = " << i;
            const double r = Row{dtype, {want}}.at(0);
            expected += r * r;
          }
          expect_sentinels(sum, dtype, n);
          if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(got)) << "n = " << n;
          } else if (std::isinf(expected)) {
            EXPECT_EQ(got, expected) << "n = " << n;
          } else {
            expect_sum_near(got, expected, n);
          }
          // In place over a: the same sum and the same stored row.
          auto in_place = a_bytes;
          const float again =
              add_rows_sum_of_squares(in_place.data() + size, b_bytes.data() + size, dtype,
                                      static_cast<std::int64_t>(n), in_place.data() + size);
          EXPECT_EQ(in_place, sum);
          EXPECT_EQ(std::bit_cast<std::uint32_t>(again), std::bit_cast<std::uint32_t>(got));
        }
      }
    }
  });
}

TEST(NormKernels, ScaleRowByWeightRoundsOnce) {
  for_each_simd_target([] {
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<float> any_weight(-2.0f, 2.0f);
    const float scale = 0.37f;
    for (const DataType dtype : kDtypes) {
      for (const std::size_t n : widths()) {
        const Row x = random_row(dtype, n, rng, true);
        std::vector<float> w(n);
        for (float& v : w) v = any_weight(rng);
        const auto x_bytes = packed(x);
        auto out = packed(Row{dtype, std::vector<std::uint32_t>(n, 0)});
        const std::size_t size = size_of(dtype);
        std::vector<float> row_weight(n);
        arrange_row_weight(dtype, w.data(), static_cast<std::int64_t>(n), row_weight.data());
        scale_row_by_weight(x_bytes.data() + size, row_weight.data(), scale, dtype,
                            static_cast<std::int64_t>(n), out.data() + size);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(element(out, dtype, i), round_to(dtype, x.at(i) * scale * w[i]))
              << "n = " << n << ", i = " << i;
        }
        expect_sentinels(out, dtype, n);
        auto in_place = x_bytes;
        scale_row_by_weight(in_place.data() + size, row_weight.data(), scale, dtype,
                            static_cast<std::int64_t>(n), in_place.data() + size);
        EXPECT_EQ(in_place, out);
      }
    }
  });
}

}  // namespace
}  // namespace tileops::ops::cpu
