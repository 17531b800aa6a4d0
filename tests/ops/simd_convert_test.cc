// The float32 row conversions of ops/cpu/simd/convert.h against the scalar float16.h functions,
// on every SIMD target this build dispatches to that the CPU supports: all 65536 float16 and
// bfloat16 patterns loaded, and stores of every such value, the midpoints between neighbours
// and their float neighbours (ties), random float bit patterns (NaN payloads, infinities,
// subnormals); contiguous rows with unaligned starts and tails, and strided rows.
#include "src/ops/cpu/simd/convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tests/support/simd_targets.h"
#include "tileops/core/float16.h"

namespace tileops::ops::cpu {
namespace {

using testing::for_each_simd_target;

struct Half {
  DataType dtype;
  float (*decode)(std::uint16_t);
  std::uint16_t (*encode)(float);
  std::uint16_t exponent_mask;  // NaN: exponent all ones and a nonzero mantissa
};
const Half kHalves[] = {{DataType::kFloat16, float16_to_float, float_to_float16, 0x7c00},
                        {DataType::kBFloat16, bfloat16_to_float, float_to_bfloat16, 0x7f80}};

bool is_nan(const Half& h, std::uint16_t bits) { return (bits & 0x7fffu) > h.exponent_mask; }

bool same_float(float a, float b) {
  return std::isnan(a) ? std::isnan(b)
                       : std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

// Floats that exercise a 16-bit encoder (see the file comment).
std::vector<float> store_inputs(const Half& h) {
  std::vector<float> values;
  for (std::uint32_t p = 0; p < 0x10000; ++p) {
    const float v = h.decode(static_cast<std::uint16_t>(p));
    if (std::isfinite(v)) values.push_back(v);
  }
  std::vector<float> xs = values;
  std::sort(values.begin(), values.end());
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const float mid = values[i] + (values[i + 1] - values[i]) / 2;  // exact in float
    xs.push_back(mid);
    xs.push_back(std::nextafter(mid, -INFINITY));
    xs.push_back(std::nextafter(mid, INFINITY));
  }
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, 0x1p-149f, -0x1p-140f, 65520.0f, 3.4e38f}) {
    xs.push_back(x);
  }
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 100000; ++i) xs.push_back(std::bit_cast<float>(bits(rng)));
  return xs;
}

TEST(SimdConvert, LoadsEveryPatternExactly) {
  std::vector<std::uint16_t> patterns(0x10000);
  for (std::uint32_t p = 0; p < 0x10000; ++p) patterns[p] = static_cast<std::uint16_t>(p);
  std::vector<float> out(0x10000 + 8);
  for_each_simd_target([&] {
    for (const Half& h : kHalves) {
      SCOPED_TRACE(name_of(h.dtype));
      // Unaligned starts, long rows and short tails; then a strided row.
      for (const auto& [start, n] :
           {std::pair<int, int>{0, 0x10000}, {1, 0xffff}, {3, 33}, {5, 7}, {9, 1}}) {
        load_f32(patterns.data() + start, h.dtype, 1, n, out.data());
        for (int i = 0; i < n; ++i) {
          ASSERT_TRUE(same_float(out[i], h.decode(patterns[start + i]))) << start + i;
        }
      }
      load_f32(patterns.data() + 1, h.dtype, 3, 0x10000 / 3, out.data());
      for (int i = 0; i < 0x10000 / 3; ++i) {
        ASSERT_TRUE(same_float(out[i], h.decode(patterns[1 + 3 * i]))) << i;
      }
    }
  });
}

TEST(SimdConvert, StoresRoundToNearestEven) {
  for (const Half& h : kHalves) {
    SCOPED_TRACE(name_of(h.dtype));
    const std::vector<float> xs = store_inputs(h);
    const auto total = static_cast<std::int64_t>(xs.size());
    std::vector<std::uint16_t> out(2 * xs.size() + 16);
    auto expect_stored = [&](std::int64_t start, std::int64_t n, std::int64_t stride) {
      std::fill(out.begin(), out.end(), 0xABCD);
      store_f32(xs.data() + start, out.data(), h.dtype, stride, n);
      for (std::int64_t i = 0; i < n; ++i) {
        const std::uint16_t want = h.encode(xs[start + i]);
        const std::uint16_t got = out[i * stride];
        if (is_nan(h, want) ? !is_nan(h, got) : got != want) {
          FAIL() << "input " << xs[start + i] << ": got 0x" << std::hex << got << ", want 0x"
                 << want;
        }
        if (stride > 1) {
          ASSERT_EQ(out[i * stride + 1], 0xABCD) << "gap written";
        }
      }
      ASSERT_EQ(out[n * stride], 0xABCD) << "written past the row";
    };
    for_each_simd_target([&] {
      expect_stored(0, total, 1);
      expect_stored(1, total - 1, 1);
      expect_stored(5, 33, 1);
      expect_stored(3, 7, 1);
      expect_stored(2, 1, 1);
      expect_stored(1, total / 2, 2);
    });
  }
}

TEST(SimdConvert, Float32RowsCopyAndStride) {
  std::vector<float> src(100);
  for (int i = 0; i < 100; ++i) src[i] = static_cast<float>(i) * 0.5f - 7.0f;
  std::vector<float> dst(300, -1.0f);
  load_f32(src.data(), DataType::kFloat32, 3, 33, dst.data());
  for (int i = 0; i < 33; ++i) EXPECT_EQ(dst[i], src[3 * i]);
  load_f32(src.data() + 4, DataType::kFloat32, 0, 5, dst.data());  // stride 0 broadcasts
  for (int i = 0; i < 5; ++i) EXPECT_EQ(dst[i], src[4]);
  std::fill(dst.begin(), dst.end(), -1.0f);
  store_f32(src.data(), dst.data(), DataType::kFloat32, 2, 100);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(dst[2 * i], src[i]);
    EXPECT_EQ(dst[2 * i + 1], -1.0f);
  }
  EXPECT_EQ(row_f32(src.data(), DataType::kFloat32, 1, 100, dst.data()), src.data());
}

}  // namespace
}  // namespace tileops::ops::cpu
