// Outputs carved out of one buffer without sharing an element are accepted and written where
// they lie: vLLM's HND flash cache ([blocks, 2, H, block_size, D], key and value caches are
// buf[:, 0] and buf[:, 1]) in reshape_and_cache, and add_rms_norm's two outputs as the halves
// of one column-major buffer. Outputs that do share bytes are still refused, naming both.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

using testing::expect_rejected;

constexpr std::int64_t kBlocks = 3, kHeads = 2, kBlockSize = 16, kHeadDim = 24, kTokens = 29;
constexpr std::int64_t kHalf = kHeads * kBlockSize * kHeadDim;  // one block's key (or value) half

// buf[:, which] of an HND buffer, as the [blocks, block_size, H, D] cache reshape_and_cache takes.
Tensor hnd_half(const TensorStorage& buf, std::int64_t which, std::int64_t shift = 0) {
  const auto size = static_cast<std::int64_t>(buf.view().element_size());
  return Tensor(static_cast<char*>(buf.data()) + (which * kHalf + shift) * size,
                {kBlocks, kBlockSize, kHeads, kHeadDim},
                {2 * kHalf, kHeadDim, kBlockSize * kHeadDim, 1}, buf.view().dtype());
}

// Distinct slots, every fourth token skipped (-1).
std::vector<double> pick_slots(std::mt19937_64& rng) {
  std::vector<double> slots(kBlocks * kBlockSize);
  for (std::size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<double>(i);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(kTokens);
  for (std::size_t t = 2; t < slots.size(); t += 4) slots[t] = -1;
  return slots;
}

class HndCacheHalves : public ::testing::TestWithParam<std::tuple<DataType, DataType>> {};

// Every byte of the buffer checked: the written slots hold the rows bit for bit, all else keeps
// its poison.
TEST_P(HndCacheHalves, ReshapeAndCacheWritesBothHalves) {
  const auto [dtype, slot_dtype] = GetParam();
  std::mt19937_64 rng(31);
  const TensorStorage buf = testing::poisoned({kBlocks, 2, kHeads, kBlockSize, kHeadDim}, dtype);
  const auto key = testing::random_tensor({kTokens, kHeads, kHeadDim}, dtype, rng);
  const auto value = testing::random_tensor({kTokens, kHeads, kHeadDim}, dtype, rng);
  const auto slots = testing::poisoned({kTokens}, slot_dtype);
  const std::vector<double> slot_values = pick_slots(rng);
  testing::from_doubles(slots, slot_values);

  std::vector<unsigned char> expected = testing::snapshot(buf);
  const std::size_t size = buf.view().element_size();
  const std::array<const unsigned char*, 2> rows{static_cast<const unsigned char*>(key.data()),
                                                 static_cast<const unsigned char*>(value.data())};
  for (std::int64_t t = 0; t < kTokens; ++t) {
    const auto slot = static_cast<std::int64_t>(slot_values[t]);
    if (slot < 0) continue;
    const std::int64_t block = slot / kBlockSize, offset = slot % kBlockSize;
    for (std::int64_t half = 0; half < 2; ++half) {
      for (std::int64_t h = 0; h < kHeads; ++h) {
        const std::int64_t to = ((block * 2 + half) * kHeads + h) * kBlockSize * kHeadDim +
                                offset * kHeadDim;  // buf[block, half, h, offset, :]
        const std::int64_t from = (t * kHeads + h) * kHeadDim;
        std::memcpy(expected.data() + to * size, rows[half] + from * size, kHeadDim * size);
      }
    }
  }
  ops::reshape_and_cache(key, value, hnd_half(buf, 0), hnd_half(buf, 1), slots);
  EXPECT_EQ(testing::snapshot(buf), expected);
}

INSTANTIATE_TEST_SUITE_P(DtypesAndSlots, HndCacheHalves,
                         ::testing::Combine(::testing::Values(DataType::kFloat32,
                                                              DataType::kFloat16,
                                                              DataType::kBFloat16),
                                            ::testing::Values(DataType::kInt32, DataType::kInt64)));

// Halves that do meet (the value cache a head row or one element into the key cache's blocks,
// or the key cache over the key rows) are refused naming both, with the buffer untouched.
TEST(HndCacheHalvesOverlap, RealOverlapIsRefused) {
  std::mt19937_64 rng(32);
  const DataType dtype = DataType::kFloat32;
  // A block more than the views span: a value half shifted forward stays inside the buffer, so
  // the only memory it meets is the key cache's (past the end it met whatever the allocator had
  // put there: on one machine the key rows, and the error named 'key').
  const TensorStorage buf =
      testing::poisoned({kBlocks + 1, 2, kHeads, kBlockSize, kHeadDim}, dtype);
  const auto key = testing::random_tensor({kTokens, kHeads, kHeadDim}, dtype, rng);
  const auto value = testing::random_tensor({kTokens, kHeads, kHeadDim}, dtype, rng);
  const auto slots = testing::poisoned({kTokens}, DataType::kInt64);
  testing::from_doubles(slots, pick_slots(rng));
  for (const std::int64_t shift : {kHeadDim, std::int64_t{1}, -kHeadDim * kBlockSize}) {
    SCOPED_TRACE(shift);
    expect_rejected(
        [&] {
          ops::reshape_and_cache(key, value, hnd_half(buf, 0), hnd_half(buf, 0, shift + kHalf),
                                 slots);
        },
        buf, "value_cache", ErrorKind::kInvalidArgument, {"'key_cache'", "overlapping"});
  }
  // Key rows read from the buffer's first block while the caches write over it.
  const Tensor rows_in_buf(buf.data(), {kTokens, kHeads, kHeadDim}, dtype);
  expect_rejected(
      [&] {
        ops::reshape_and_cache(rows_in_buf, value, hnd_half(buf, 0), hnd_half(buf, 1), slots);
      },
      buf, "key_cache", ErrorKind::kInvalidArgument, {"'key'", "overlapping"});
}

// add_rms_norm's out and residual_out as the two halves of one column-major [D, 2, rows]
// buffer (out[r, c] = buf[c, 0, r]): no uniform row stride, no shared element. Accepted, and
// right against a float64 reference; shifted by one element they meet and are refused.
TEST(InterleavedOutputs, AddRmsNormWritesBothHalvesOfOneBuffer) {
  std::mt19937_64 rng(33);
  const std::int64_t rows = 5, d = 40;
  const DataType f32 = DataType::kFloat32;
  const auto x = testing::random_tensor({rows, d}, f32, rng);
  const auto residual = testing::random_tensor({rows, d}, f32, rng);
  const auto weight = testing::random_tensor({d}, f32, rng);
  const TensorStorage buf = testing::poisoned({d, 2, rows}, f32);
  const auto half = [&](std::int64_t offset) {
    return Tensor(static_cast<float*>(buf.data()) + offset, {rows, d}, {1, 2 * rows}, f32);
  };
  const Tensor out = half(0), residual_out = half(rows);
  ops::add_rms_norm(x, residual, weight, 1e-6, out, residual_out);

  const std::vector<double> xs = testing::to_doubles(x), rs = testing::to_doubles(residual);
  std::vector<double> sum(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    sum[i] = static_cast<double>(static_cast<float>(xs[i] + rs[i]));
  }
  EXPECT_EQ(testing::compare(residual_out, sum, {0.0, 0.0}), "");
  const auto expected = testing::reference::rms_norm(sum, testing::to_doubles(weight), 1e-6, d);
  EXPECT_EQ(testing::compare(out, expected, testing::tolerance_for(f32)), "");
  expect_rejected([&] { ops::add_rms_norm(x, residual, weight, 1e-6, out, half(1)); }, buf,
                  "residual_out", ErrorKind::kInvalidArgument, {"'out'", "overlapping"});
}

}  // namespace
}  // namespace tileops
