// swap_blocks and copy_blocks against an element-by-element reference: dtypes, strided blocks,
// int32/int64 mappings, row order (chains, repeated destinations), threads, class forms, and
// bad ids refused before anything is written.
#include "tileops/ops/block_copies.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::Layout;
using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

TensorStorage mapping_of(const Pairs& pairs, DataType dtype = DataType::kInt64) {
  TensorStorage m({static_cast<std::int64_t>(pairs.size()), 2}, dtype);
  std::vector<double> values;
  for (auto [s, d] : pairs) values.insert(values.end(), {double(s), double(d)});
  testing::from_doubles(m, values);
  return m;
}

// The row-major values after the copies, block by block (a block is `block` values).
std::vector<double> copied(std::vector<double> dst, const std::vector<double>& src,
                           std::int64_t block, const Pairs& pairs, bool same_tensor) {
  for (auto [s, d] : pairs) {
    const std::vector<double>& from = same_tensor ? dst : src;
    const std::vector<double> values(from.begin() + s * block, from.begin() + (s + 1) * block);
    std::copy(values.begin(), values.end(), dst.begin() + d * block);
  }
  return dst;
}

constexpr DataType kDtypes[] = {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16,
                                DataType::kInt8, DataType::kInt64};

TEST(SwapBlocks, MatchesReferenceForEveryDtypeAndLayout) {
  const Pairs pairs{{0, 8}, {5, 0}, {2, 3}, {2, 4}, {1, 8}};
  for (DataType dtype : kDtypes) {
    for (DataType index : {DataType::kInt32, DataType::kInt64}) {
      for (Layout src_layout : {Layout::kContiguous, Layout::kStrided}) {
        SCOPED_TRACE(::testing::Message() << name_of(dtype) << " " << name_of(index) << " "
                                          << testing::layout_name(src_layout));
        std::mt19937_64 rng(7);
        auto src = testing::random_tensor({6, 3, 4, 5}, dtype, rng, src_layout, -50, 50);
        auto dst = testing::random_tensor({9, 3, 4, 5}, dtype, rng, Layout::kStrided, -50, 50);
        const std::vector<double> src_before = testing::to_doubles(src);
        const auto expected = copied(testing::to_doubles(dst), src_before, 60, pairs, false);
        swap_blocks(src, dst, mapping_of(pairs, index));
        EXPECT_EQ(testing::to_doubles(dst), expected);
        EXPECT_EQ(testing::to_doubles(src), src_before);
      }
    }
  }
}

TEST(CopyBlocks, RowsApplyInOrder) {
  // A chain 1 -> 2 -> 5, a block onto itself, a repeated destination (the last row wins).
  const Pairs pairs{{1, 2}, {2, 5}, {4, 4}, {0, 7}, {3, 7}};
  for (DataType dtype : kDtypes) {
    for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << testing::layout_name(layout));
      std::mt19937_64 rng(8);
      auto cache = testing::random_tensor({8, 2, 33}, dtype, rng, layout, -50, 50);
      const auto expected = copied(testing::to_doubles(cache), {}, 66, pairs, true);
      copy_blocks(cache, mapping_of(pairs, DataType::kInt32));
      EXPECT_EQ(testing::to_doubles(cache), expected);
    }
  }
}

// Large blocks are split over the threads; a transposed block (HND inside NHD) still copies.
TEST(CopyBlocks, LargeAndTransposedBlocksOnThreads) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  std::mt19937_64 rng(9);
  auto storage = testing::random_tensor({4, 16, 8, 128}, DataType::kBFloat16, rng,
                                        Layout::kContiguous, -50, 50);
  const Tensor cache = storage.view().transpose(1, 2);  // [4, 8, 16, 128], blocks not row-major
  const Pairs pairs{{0, 3}, {3, 1}};
  const auto expected = copied(testing::to_doubles(cache), {}, 8 * 16 * 128, pairs, true);
  copy_blocks(cache, mapping_of(pairs), ctx);
  EXPECT_EQ(testing::to_doubles(cache), expected);
}

TEST(BlockCopies, BadIdsAreRefusedBeforeWriting) {
  std::mt19937_64 rng(1);
  auto src = testing::random_tensor({6, 4}, DataType::kFloat32, rng);
  auto dst = testing::random_tensor({9, 4}, DataType::kFloat32, rng);
  using testing::expect_rejected;
  for (const Pairs& bad : {Pairs{{1, 1}, {0, 9}}, Pairs{{6, 0}}, Pairs{{-1, 0}}, Pairs{{0, -2}}}) {
    const auto m = mapping_of(bad);
    expect_rejected([&] { swap_blocks(src, dst, m); }, dst, "block_mapping",
                    ErrorKind::kInvalidArgument, {"at row"});
  }
  expect_rejected(
      [&] {
        copy_blocks(dst, mapping_of({{0, 1}, {9, 0}}));
      },
      dst, "block_mapping", ErrorKind::kInvalidArgument, {"[0, 9)", "9 at row 1"});
  // An id beyond int32 is refused, not truncated.
  expect_rejected(
      [&] {
        copy_blocks(dst, mapping_of({{0, (std::int64_t{1} << 32) + 1}}));
      },
      dst, "block_mapping");
  auto three = TensorStorage({2, 3}, DataType::kInt64);
  testing::from_doubles(three, {0, 1, 2, 0, 1, 2});
  expect_rejected([&] { swap_blocks(src, dst, three); }, dst, "block_mapping");
  auto float_mapping = testing::random_tensor({1, 2}, DataType::kFloat32, rng);
  expect_rejected([&] { copy_blocks(dst, float_mapping); }, dst, "block_mapping",
                  ErrorKind::kInvalidType);
  auto other_block = testing::random_tensor({9, 5}, DataType::kFloat32, rng);
  expect_rejected([&] { swap_blocks(src, other_block, mapping_of({{0, 0}})); }, other_block, "dst");
  auto half = testing::random_tensor({9, 4}, DataType::kFloat16, rng);
  expect_rejected(
      [&] {
        swap_blocks(src, half, mapping_of({{0, 0}}));
      },
      half, "dst", ErrorKind::kInvalidType);
  // One buffer as src and dst: copy_blocks' job, refused here.
  expect_rejected([&] { swap_blocks(dst, dst, mapping_of({{0, 1}})); }, dst, "dst");
}

TEST(BlockCopies, ClassFormsCheckIdsOnEveryCall) {
  std::mt19937_64 rng(2);
  auto cache = testing::random_tensor({5, 7}, DataType::kFloat16, rng);
  const CopyBlocks copy(cache, mapping_of({{0, 1}}));
  const auto m = mapping_of({{2, 3}});
  const auto expected = copied(testing::to_doubles(cache), {}, 7, {{2, 3}}, true);
  copy(cache, m);
  EXPECT_EQ(testing::to_doubles(cache), expected);
  const auto bad = mapping_of({{2, 5}});
  testing::expect_rejected([&] { copy(cache, bad); }, cache, "block_mapping");
  auto src = testing::random_tensor({3, 7}, DataType::kFloat16, rng);
  const SwapBlocks swap(src, cache, mapping_of({{0, 1}}));
  const auto swap_bad = mapping_of({{3, 0}});
  testing::expect_rejected([&] { swap(src, cache, swap_bad); }, cache, "block_mapping");
}

}  // namespace
}  // namespace tileops::ops
