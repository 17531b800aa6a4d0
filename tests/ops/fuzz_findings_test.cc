// Regression tests of the fuzz targets' findings (fuzz/corpus/*/finding-*): empty views whose
// extents and strides are unbounded, attributes beyond a double's exact integers, an extent sum
// beyond int64, packing an empty weight of 2^62 rows, and rounding extents of INT64_MAX up to
// whole blocks (n + 15 wrapped where ceil_div does not). Each ran into signed overflow (seen
// by UBSan in the asan build), a wrong window or a loop of 2^58 steps before its fix.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops/add.h"
#include "tileops/ops/cat.h"
#include "tileops/ops/flash_attention.h"
#include "tileops/ops/packed_linear.h"

namespace tileops::testing {
namespace {

constexpr std::int64_t kHuge = std::int64_t{1} << 62;

// Views of no element may have any extents and strides: nothing is read or written.
TEST(FuzzFindings, EmptyViewsWithHugeExtentsAndStrides) {
  float cell = 1.0f;
  const Tensor a(&cell, Dims{kHuge, 0, 3}, Dims{kHuge, kHuge, 3}, DataType::kFloat32);
  const Tensor b(&cell, Dims{kHuge, 0, 3}, Dims{1, 7, kHuge}, DataType::kFloat32);
  const Tensor out(&cell, Dims{kHuge, 0, 3}, Dims{3, kHuge, 1}, DataType::kFloat32);
  ops::add(a, b, out);
  const std::array<Tensor, 2> parts{a, b};
  const Tensor joined(&cell, Dims{kHuge, 0, 6}, Dims{6, kHuge, 1}, DataType::kFloat32);
  ops::cat(parts, 2, joined);
  EXPECT_EQ(cell, 1.0f);
}

TEST(FuzzFindings, CatExtentsSummingBeyondInt64AreRefused) {
  std::uint8_t cell = 0;
  const Tensor half(&cell, Dims{kHuge, 1}, Dims{0, 0}, DataType::kUInt8);
  const std::array<Tensor, 2> parts{half, half};
  TensorStorage out(Dims{1, 1}, DataType::kUInt8);
  expect_rejected([&] { ops::cat(parts, 0, out); }, {&out}, "tensors[1]",
                  ErrorKind::kInvalidArgument, {"overflows int64"});
}

// A window of INT64_MAX keys is unbounded: the same output as -1.
TEST(FuzzFindings, HugeWindowsActAsUnbounded) {
  std::mt19937_64 rng(7);
  const TensorStorage q = random_tensor({5, 2, 16}, DataType::kFloat32, rng);
  const TensorStorage k = random_tensor({9, 1, 16}, DataType::kFloat32, rng);
  const TensorStorage v = random_tensor({9, 1, 16}, DataType::kFloat32, rng);
  ops::AttentionAttributes attrs;
  attrs.num_heads = 2;
  attrs.num_kv_heads = 1;
  attrs.head_size = 16;
  attrs.causal = true;
  TensorStorage unbounded = poisoned({5, 2, 16}, DataType::kFloat32);
  ops::flash_attention(q, k, v, Tensor(), Tensor(), Tensor(), attrs, unbounded);
  attrs.window_left = INT64_MAX;
  TensorStorage huge = poisoned({5, 2, 16}, DataType::kFloat32);
  ops::flash_attention(q, k, v, Tensor(), Tensor(), Tensor(), attrs, huge);
  EXPECT_EQ(element_bits(huge), element_bits(unbounded));
}

// An empty K packs nothing, whatever N is: no walk over N / 16 groups.
TEST(FuzzFindings, PackingAnEmptyWeightIsImmediate) {
  float cell = 0.0f;
  const Tensor weight(&cell, Dims{kHuge, 0}, Dims{0, 1}, DataType::kFloat32);
  ASSERT_EQ(ops::packed_linear_weight_numel(kHuge, 0, DataType::kFloat32), 0);
  const Tensor packed(&cell, Dims{0}, DataType::kFloat32);
  const auto start = std::chrono::steady_clock::now();
  ops::pack_linear_weight(weight, packed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Extents of INT64_MAX in an empty weight or in broadcast rows are counted in whole blocks
// without forming INT64_MAX + 15.
TEST(FuzzFindings, Int64MaxExtentsRoundUpWithoutOverflow) {
  constexpr std::int64_t kMax = INT64_MAX;
  float cell = 0.0f;
  for (const DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
    const Tensor no_rows(&cell, Dims{0, kMax}, Dims{0, 0}, dtype);
    const Tensor no_columns(&cell, Dims{kMax, 0}, Dims{0, 0}, dtype);
    const Tensor packed(&cell, Dims{0}, dtype);
    ops::pack_linear_weight(no_rows, packed);
    ops::pack_linear_weight(no_columns, packed);
    // As many broadcast rows as int64 bytes allow, against N = 0: nothing to compute.
    const Tensor input(&cell, Dims{kMax / 4, 1}, Dims{0, 0}, dtype);
    const Tensor out(&cell, Dims{kMax / 4, 0}, Dims{0, 1}, dtype);
    ops::linear_packed(input, packed, Tensor(), out);
  }
  EXPECT_EQ(cell, 0.0f);
}

}  // namespace
}  // namespace tileops::testing
