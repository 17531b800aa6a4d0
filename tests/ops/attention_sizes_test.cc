// Sizes the attention contracts derive from their arguments are checked, not wrapped: a paged
// cache's capacity max_blocks · block_size (both broadcast extents: 2^40 · 2^30 once wrapped to
// 64 keys and ran), and mha_fwd_kvcache's int32 cumulative cache lengths (two sequences of
// 2^31 - 1 keys summed past int32).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

using testing::expect_rejected;

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kI32 = DataType::kInt32;

TEST(AttentionSizes, PagedCapacityBeyondInt64IsRefused) {
  std::mt19937_64 rng(3);
  auto query = testing::random_tensor({1, 1, 8}, kF32, rng);
  auto row = testing::random_tensor({8}, kF32, rng);
  const Tensor cache(row.data(), Dims{1, std::int64_t{1} << 30, 1, 8}, Dims{0, 0, 0, 1}, kF32);
  auto seq_lens = testing::poisoned({1}, kI32);
  testing::from_doubles(seq_lens, {1});
  auto block = testing::poisoned({1}, kI32);
  testing::from_doubles(block, {0});
  const Tensor block_table(block.data(), Dims{1, std::int64_t{1} << 40}, Dims{0, 0}, kI32);
  auto output = testing::poisoned({1, 1, 8}, kF32);
  ops::AttentionAttributes attrs;
  attrs.num_heads = 1;
  attrs.num_kv_heads = 1;
  attrs.head_size = 8;
  expect_rejected(
      [&] { ops::paged_attention(query, cache, cache, seq_lens, block_table, attrs, output); },
      output, "block_table", ErrorKind::kInvalidArgument, {"paged_attention", "overflows int64"});
}

TEST(AttentionSizes, CumulativeCacheLengthsBeyondInt32AreRefused) {
  std::mt19937_64 rng(4);
  auto q = testing::random_tensor({2, 1, 1, 8}, kF32, rng);
  auto cache = testing::random_tensor({4, 16, 1, 8}, kF32, rng);
  auto lens = testing::poisoned({2}, kI32);
  testing::from_doubles(lens, {2147483647.0, 2147483647.0});
  auto table = testing::poisoned({2, 4}, kI32);
  testing::from_doubles(table, {0, 1, 2, 3, 0, 1, 2, 3});
  auto out = testing::poisoned({2, 1, 1, 8}, kF32);
  expect_rejected(
      [&] { ops::mha_fwd_kvcache(q, cache, cache, lens, table, out, 0.0, false, -1, -1); }, out,
      "cache_seqlens", ErrorKind::kInvalidArgument, {"mha_fwd_kvcache", "2^31 - 1"});
}

}  // namespace
}  // namespace tileops
