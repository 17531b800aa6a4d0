// reshape_and_cache: rows land in their slots bit for bit (block sizes 16 and 32, int32/int64
// slots, several dtypes, strided inputs and caches), slot -1 skips (every other cache entry
// checked untouched), the combined kv_cache form, the class form and bad inputs (an
// out-of-range slot leaves the caches untouched).
#include "tileops/ops/reshape_and_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/core/float8.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

constexpr std::int64_t kHeads = 2;
constexpr std::int64_t kBlocks = 3;

// The cache after writing rows into slots: starts as `before`, row t replaces slot slots[t].
std::vector<double> expected_cache(std::vector<double> before, const std::vector<double>& rows,
                                   const std::vector<double>& slots, std::int64_t row_size) {
  for (std::size_t t = 0; t < slots.size(); ++t) {
    const auto slot = static_cast<std::int64_t>(slots[t]);
    if (slot < 0) continue;
    std::copy(rows.begin() + static_cast<std::int64_t>(t) * row_size,
              rows.begin() + static_cast<std::int64_t>(t + 1) * row_size,
              before.begin() + slot * row_size);
  }
  return before;
}

// Distinct slots, a few of them -1.
std::vector<double> pick_slots(std::int64_t tokens, std::int64_t num_slots, std::mt19937_64& rng) {
  std::vector<double> all(static_cast<std::size_t>(num_slots));
  for (std::int64_t i = 0; i < num_slots; ++i) all[i] = static_cast<double>(i);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<std::size_t>(tokens));
  for (std::size_t t = 1; t < all.size(); t += 4) all[t] = -1;
  return all;
}

using Param = std::tuple<DataType, std::int64_t, DataType, Layout, std::int64_t>;

class ReshapeAndCacheTest : public ::testing::TestWithParam<Param> {};

TEST_P(ReshapeAndCacheTest, RowsLandInTheirSlots) {
  const auto [dtype, block_size, slot_dtype, layout, head_size] = GetParam();
  std::mt19937_64 rng(21);
  const std::int64_t tokens = 37;
  const std::int64_t row = kHeads * head_size;
  auto key = testing::random_tensor({tokens, kHeads, head_size}, dtype, rng, layout);
  auto value = testing::random_tensor({tokens, kHeads, head_size}, dtype, rng, layout);
  const Dims cache_shape{kBlocks, block_size, kHeads, head_size};
  auto key_cache = testing::random_tensor(cache_shape, dtype, rng, layout);
  auto value_cache = testing::random_tensor(cache_shape, dtype, rng, layout);
  auto slots = testing::poisoned({tokens}, slot_dtype, layout);
  const std::vector<double> slot_values = pick_slots(tokens, kBlocks * block_size, rng);
  testing::from_doubles(slots, slot_values);
  const auto k_expected = expected_cache(testing::to_doubles(key_cache.view()),
                                         testing::to_doubles(key.view()), slot_values, row);
  const auto v_expected = expected_cache(testing::to_doubles(value_cache.view()),
                                         testing::to_doubles(value.view()), slot_values, row);
  reshape_and_cache(key, value, key_cache, value_cache, slots);
  const testing::Tolerance exact{0.0, 0.0};
  EXPECT_EQ(testing::compare(key_cache.view(), k_expected, exact), "");
  EXPECT_EQ(testing::compare(value_cache.view(), v_expected, exact), "");
}

INSTANTIATE_TEST_SUITE_P(
    BlockSizesDtypesLayouts, ReshapeAndCacheTest,
    ::testing::Combine(
        ::testing::Values(DataType::kFloat32, DataType::kBFloat16, DataType::kFloat8E4M3FN),
        ::testing::Values(16, 32), ::testing::Values(DataType::kInt32, DataType::kInt64),
        ::testing::Values(Layout::kContiguous, Layout::kStrided), ::testing::Values(8, 65)));

TEST(ReshapeAndCache, CombinedCacheAndThreads) {
  std::mt19937_64 rng(22);
  ThreadPool pool(3);
  Context ctx;
  ctx.thread_pool = &pool;
  const std::int64_t tokens = 300, block_size = 16, blocks = 20, d = 16;
  auto key = testing::random_tensor({tokens, kHeads, d}, DataType::kFloat16, rng);
  auto value = testing::random_tensor({tokens, kHeads, d}, DataType::kFloat16, rng);
  auto kv = testing::random_tensor({2, blocks, block_size, kHeads, d}, DataType::kFloat16, rng);
  auto slots = testing::poisoned({tokens}, DataType::kInt64);
  const std::vector<double> slot_values = pick_slots(tokens, blocks * block_size, rng);
  testing::from_doubles(slots, slot_values);
  std::vector<double> before = testing::to_doubles(kv.view());
  const std::size_t half = before.size() / 2;
  auto k_part = expected_cache({before.begin(), before.begin() + half},
                               testing::to_doubles(key.view()), slot_values, kHeads * d);
  const auto v_part = expected_cache({before.begin() + half, before.end()},
                                     testing::to_doubles(value.view()), slot_values, kHeads * d);
  k_part.insert(k_part.end(), v_part.begin(), v_part.end());
  reshape_and_cache(key, value, kv, slots, ctx);
  EXPECT_EQ(testing::compare(kv.view(), k_part, {0.0, 0.0}), "");
}

// vLLM's caches in place: the key cache [num_blocks, Hkv, D / x, block_size, x] as the 5-D view
// [num_blocks, block_size, Hkv, D / x, x] (contiguous pieces of x, or every other element),
// the value cache [num_blocks, Hkv, D, block_size] as a 4-D view; bit for bit, gaps untouched.
TEST(ReshapeAndCache, VllmCacheLayouts) {
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat8E4M3FN}) {
    for (std::int64_t gap : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " gap " << gap);
      std::mt19937_64 rng(25);
      const std::int64_t tokens = 29, bs = 16, d = 48;
      const std::int64_t x = 16 / static_cast<std::int64_t>(size_of(dtype));
      const std::int64_t piece = x * gap, row = bs * piece, head = (d / x) * row;
      auto key = testing::random_tensor({tokens, kHeads, d}, dtype, rng, Layout::kStrided);
      auto value = testing::random_tensor({tokens, kHeads, d}, dtype, rng);
      TensorStorage key_cache(Dims{kBlocks, bs, kHeads, d / x, x},
                              Dims{kHeads * head, piece, head, row, gap}, dtype);
      TensorStorage value_cache(Dims{kBlocks, bs, kHeads, d}, Dims{kHeads * d * bs, 1, d * bs, bs},
                                dtype);
      key_cache.fill_bytes(0xFF), value_cache.fill_bytes(0xFF);
      testing::from_doubles(key_cache, std::vector<double>(kBlocks * bs * kHeads * d, 0.5));
      testing::from_doubles(value_cache, std::vector<double>(kBlocks * bs * kHeads * d, -0.5));
      auto slots = testing::poisoned({tokens}, DataType::kInt64);
      const std::vector<double> slot_values = pick_slots(tokens, kBlocks * bs, rng);
      testing::from_doubles(slots, slot_values);
      const auto k_expected =
          expected_cache(testing::to_doubles(key_cache.view()), testing::to_doubles(key.view()),
                         slot_values, kHeads * d);
      const auto v_expected =
          expected_cache(testing::to_doubles(value_cache.view()), testing::to_doubles(value.view()),
                         slot_values, kHeads * d);
      std::vector<unsigned char> gaps = testing::snapshot(key_cache);
      reshape_and_cache(key, value, key_cache, value_cache, slots);
      EXPECT_EQ(testing::compare(key_cache.view(), k_expected, {0.0, 0.0}), "");
      EXPECT_EQ(testing::compare(value_cache.view(), v_expected, {0.0, 0.0}), "");
      if (gap == 2) {  // the odd elements are no part of the view: still 0xFF
        const std::vector<unsigned char> after = testing::snapshot(key_cache);
        const std::size_t size = size_of(dtype);
        for (std::size_t i = size; i + size <= after.size(); i += 2 * size) {
          ASSERT_EQ(after[i], gaps[i]) << i;
        }
      }
    }
  }
  // A 5-D cache whose last two dims do not make D is refused naming it.
  std::mt19937_64 rng(26);
  auto key = testing::random_tensor({2, kHeads, 8}, DataType::kFloat32, rng);
  auto kc = testing::poisoned({kBlocks, 16, kHeads, 3, 3}, DataType::kFloat32);
  auto vc = testing::poisoned({kBlocks, 16, kHeads, 8}, DataType::kFloat32);
  auto slots = testing::poisoned({2}, DataType::kInt32);
  testing::from_doubles(slots, {0, 1});
  expect_rejected([&] { reshape_and_cache(key, key, kc, vc, slots); },
                  std::vector<const TensorStorage*>{&kc, &vc}, "key_cache",
                  ErrorKind::kInvalidArgument, {"D / x, x"});
}

// vLLM's fp8 caches: float32/float16/bfloat16 rows stored as fp8(float(x) / scale), rounded to
// nearest even and saturating (vLLM's __NV_SATFINITE conversion), against core/float8's encoder;
// large values, NaN, subnormals and the 5-D key layout included; k_scale/v_scale none = 1.
TEST(ReshapeAndCache, QuantisesIntoFp8Caches) {
  for (DataType rows_dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (DataType fp8 : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2}) {
      for (bool scaled : {false, true}) {
        SCOPED_TRACE(::testing::Message() << name_of(rows_dtype) << " into " << name_of(fp8)
                                          << (scaled ? " scaled" : ""));
        std::mt19937_64 rng(27);
        const std::int64_t tokens = 9, bs = 16, d = 32, x = 16;
        auto key = testing::random_tensor({tokens, kHeads, d}, rows_dtype, rng, Layout::kStrided,
                                          -600.0, 600.0);
        auto value = testing::random_tensor({tokens, kHeads, d}, rows_dtype, rng);
        std::vector<double> k = testing::to_doubles(key.view());
        k[0] = 1e5, k[1] = -1e5, k[2] = std::nan(""), k[3] = 1e-4, k[4] = -3e-3, k[5] = 0.0;
        testing::from_doubles(key, k);
        k = testing::to_doubles(key.view());  // as rounded to the rows' dtype
        const std::vector<double> v = testing::to_doubles(value.view());
        // vLLM's key layout [blocks, Hkv, D / x, block_size, x] as a 5-D view; NHD values.
        TensorStorage key_cache(Dims{kBlocks, bs, kHeads, d / x, x},
                                Dims{kHeads * d * bs, x, d * bs, bs * x, 1}, fp8);
        auto value_cache = testing::poisoned({kBlocks, bs, kHeads, d}, fp8);
        key_cache.fill_bytes(0xFF);
        auto k_scale = testing::poisoned({1}, DataType::kFloat32);
        auto v_scale = testing::poisoned({}, DataType::kFloat32);
        testing::from_doubles(k_scale, {4.0});
        testing::from_doubles(v_scale, {0.25});
        auto slots = testing::poisoned({tokens}, DataType::kInt32);
        const std::vector<double> slot_values = pick_slots(tokens, kBlocks * bs, rng);
        testing::from_doubles(slots, slot_values);
        reshape_and_cache(key, value, key_cache, value_cache, slots,
                          scaled ? k_scale.view() : Tensor(), scaled ? v_scale.view() : Tensor());
        const auto encode = [&](double x_value, double scale) {
          const double q =
              static_cast<double>(static_cast<float>(x_value) / static_cast<float>(scale));
          return fp8 == DataType::kFloat8E4M3FN ? double_to_float8_e4m3fn(q, Overflow::kSaturate)
                                                : double_to_float8_e5m2(q, Overflow::kSaturate);
        };
        const auto kc_bits = testing::element_bits(key_cache.view());
        const auto vc_bits = testing::element_bits(value_cache.view());
        const std::int64_t row = kHeads * d;
        for (std::int64_t t = 0; t < tokens; ++t) {
          const auto slot = static_cast<std::int64_t>(slot_values[t]);
          for (std::int64_t i = 0; slot >= 0 && i < row; ++i) {
            ASSERT_EQ(kc_bits[slot * row + i], encode(k[t * row + i], scaled ? 4.0 : 1.0))
                << t << " " << i << " " << k[t * row + i];
            ASSERT_EQ(vc_bits[slot * row + i], encode(v[t * row + i], scaled ? 0.25 : 1.0))
                << t << " " << i;
          }
        }
        // Unwritten slots keep their bytes (0xFF).
        for (std::int64_t slot = 0; slot < kBlocks * bs; ++slot) {
          if (std::find(slot_values.begin(), slot_values.end(), static_cast<double>(slot)) !=
              slot_values.end()) {
            continue;
          }
          for (std::int64_t i = 0; i < row; ++i) ASSERT_EQ(vc_bits[slot * row + i], 0xFFu);
        }
      }
    }
  }
  // An fp8 cache of int8 rows, a float16 cache of float32 rows and a two-element scale are
  // refused naming the argument.
  std::mt19937_64 rng(28);
  auto key = testing::random_tensor({2, kHeads, 8}, DataType::kFloat32, rng);
  auto ints = testing::random_tensor({2, kHeads, 8}, DataType::kInt8, rng);
  auto kc = testing::poisoned({kBlocks, 16, kHeads, 8}, DataType::kFloat8E4M3FN);
  auto vc = testing::poisoned({kBlocks, 16, kHeads, 8}, DataType::kFloat8E4M3FN);
  auto half = testing::poisoned({kBlocks, 16, kHeads, 8}, DataType::kFloat16);
  auto slots = testing::poisoned({2}, DataType::kInt32);
  testing::from_doubles(slots, {0, 1});
  auto two = testing::poisoned({2}, DataType::kFloat32);
  const std::vector<const TensorStorage*> caches{&kc, &vc};
  expect_rejected([&] { reshape_and_cache(ints, key, kc, vc, slots); }, caches, "key_cache",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { reshape_and_cache(key, key, half, vc, slots); }, caches, "key_cache",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { reshape_and_cache(key, key, kc, vc, slots, two, Tensor()); }, caches,
                  "k_scale");
  expect_rejected([&] { reshape_and_cache(key, key, kc, vc, slots, Tensor(), two); }, caches,
                  "v_scale");
}

TEST(ReshapeAndCache, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(23);
  const Dims rows{4, kHeads, 8}, cache{kBlocks, 16, kHeads, 8};
  auto key = testing::random_tensor(rows, DataType::kFloat32, rng);
  auto kc = testing::random_tensor(cache, DataType::kFloat32, rng);
  auto vc = testing::random_tensor(cache, DataType::kFloat32, rng);
  auto slots = testing::poisoned({4}, DataType::kInt32);
  testing::from_doubles(slots, {0, 1, 2, 3});
  const ReshapeAndCache op(key, key, kc, vc, slots);
  for (int round = 0; round < 2; ++round) {
    auto k = testing::random_tensor(rows, DataType::kFloat32, rng);
    auto v = testing::random_tensor(rows, DataType::kFloat32, rng);
    const std::vector<double> s = pick_slots(4, kBlocks * 16, rng);
    testing::from_doubles(slots, s);
    const auto k_expected =
        expected_cache(testing::to_doubles(kc.view()), testing::to_doubles(k.view()), s, 16);
    op(k, v, kc, vc, slots);
    EXPECT_EQ(testing::compare(kc.view(), k_expected, {0.0, 0.0}), "");
  }
}

TEST(ReshapeAndCache, RejectsBadInputs) {
  std::mt19937_64 rng(24);
  const Dims rows{5, kHeads, 8}, cache{kBlocks, 16, kHeads, 8};
  auto key = testing::random_tensor(rows, DataType::kFloat32, rng);
  auto value = testing::random_tensor(rows, DataType::kFloat32, rng);
  auto kc = testing::random_tensor(cache, DataType::kFloat32, rng);
  auto vc = testing::random_tensor(cache, DataType::kFloat32, rng);
  const std::vector<const TensorStorage*> caches{&kc, &vc};
  auto slots = testing::poisoned({5}, DataType::kInt64);
  // The bad slot comes last, after tokens that would already have been written.
  testing::from_doubles(slots, {0, 1, 2, 3, kBlocks * 16});
  expect_rejected([&] { reshape_and_cache(key, value, kc, vc, slots); }, caches, "slot_mapping",
                  ErrorKind::kInvalidArgument, {"slot 48", "token 4", "[0, 48)"});
  testing::from_doubles(slots, {0, -2, 2, 3, 4});
  expect_rejected([&] { reshape_and_cache(key, value, kc, vc, slots); }, caches, "slot_mapping",
                  ErrorKind::kInvalidArgument, {"slot -2", "token 1"});
  // Past 32 bits: slots whose low halves (3, and -1 for skip) are valid are still out of range.
  testing::from_doubles(slots, {0, 1, 2, 4294967296.0 + 3, 4});
  expect_rejected([&] { reshape_and_cache(key, value, kc, vc, slots); }, caches, "slot_mapping",
                  ErrorKind::kInvalidArgument, {"slot 4294967299", "token 3"});
  testing::from_doubles(slots, {0, 1, 2, 3, 4294967295.0});
  expect_rejected([&] { reshape_and_cache(key, value, kc, vc, slots); }, caches, "slot_mapping",
                  ErrorKind::kInvalidArgument, {"slot 4294967295", "token 4"});
  testing::from_doubles(slots, {0, 1, 2, 3, 4});
  auto float_slots = testing::random_tensor({5}, DataType::kFloat32, rng);
  expect_rejected([&] { reshape_and_cache(key, value, kc, vc, float_slots); }, caches,
                  "slot_mapping", ErrorKind::kInvalidType);
  auto wide = testing::random_tensor({5, kHeads, 16}, DataType::kFloat32, rng);
  expect_rejected([&] { reshape_and_cache(wide, value, kc, vc, slots); }, caches, "key_cache");
  auto half = testing::random_tensor(cache, DataType::kFloat16, rng);
  expect_rejected([&] { reshape_and_cache(key, value, kc, half, slots); }, caches, "value_cache",
                  ErrorKind::kInvalidType);
  auto short_key = testing::random_tensor({4, kHeads, 8}, DataType::kFloat32, rng);
  expect_rejected([&] { reshape_and_cache(short_key, value, kc, vc, slots); }, caches, "key");
  expect_rejected([&] { reshape_and_cache(key, value, kc, kc, slots); }, caches, "value_cache");
  auto kv = testing::random_tensor({3, kBlocks, 16, kHeads, 8}, DataType::kFloat32, rng);
  expect_rejected([&] { reshape_and_cache(key, value, kv, slots); }, kv, "kv_cache");
}

// Rows land bit for bit: NaN (either sign) and ±inf too, every float dtype.
TEST(ReshapeAndCache, NonFiniteRowsLandExactly) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(name_of(dtype));
    std::mt19937_64 rng(24);
    const std::int64_t tokens = 20, block_size = 16, d = 24, row = kHeads * d;
    auto key =
        testing::random_nonfinite_tensor({tokens, kHeads, d}, dtype, rng, Layout::kStrided, 3);
    auto value = testing::random_nonfinite_tensor({tokens, kHeads, d}, dtype, rng);
    const Dims cache_shape{kBlocks, block_size, kHeads, d};
    auto key_cache = testing::random_tensor(cache_shape, dtype, rng);
    auto value_cache = testing::random_tensor(cache_shape, dtype, rng);
    auto slots = testing::poisoned({tokens}, DataType::kInt64);
    const std::vector<double> slot_values = pick_slots(tokens, kBlocks * block_size, rng);
    testing::from_doubles(slots, slot_values);
    reshape_and_cache(key, value, key_cache, value_cache, slots);
    const auto k_bits = testing::element_bits(key.view()),
               v_bits = testing::element_bits(value.view());
    const auto kc_bits = testing::element_bits(key_cache.view());
    const auto vc_bits = testing::element_bits(value_cache.view());
    for (std::int64_t t = 0; t < tokens; ++t) {
      const auto slot = static_cast<std::int64_t>(slot_values[t]);
      if (slot < 0) continue;
      for (std::int64_t i = 0; i < row; ++i) {
        EXPECT_EQ(kc_bits[slot * row + i], k_bits[t * row + i]) << t << " " << i;
        EXPECT_EQ(vc_bits[slot * row + i], v_bits[t * row + i]) << t << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tileops::ops
