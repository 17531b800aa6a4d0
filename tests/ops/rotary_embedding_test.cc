// rotary_embedding against a float64 reference: GPT-NeoX and GPT-J styles, full and partial
// rotary, [T, H*D] and [T, H, D] layouts, int32/int64 positions, every float dtype, strided
// views, in place equal to out of place, no key, the class form and bad inputs (a bad position
// leaves the outputs untouched).
#include "tileops/ops/rotary_embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/rotary_reference.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

constexpr std::int64_t kTokens = 5;
constexpr std::int64_t kMaxPos = 40;

struct Shape {
  std::int64_t heads, kv_heads, head_size, rot_dim;
  bool three_d;
};
// gtest would otherwise print the struct's bytes, padding included (uninitialised to valgrind).
void PrintTo(const Shape& s, std::ostream* os) {
  *os << "heads " << s.heads << "/" << s.kv_heads << ", head_size " << s.head_size << ", rot_dim "
      << s.rot_dim << (s.three_d ? ", [T, H, D]" : ", [T, H*D]");
}

Dims operand_shape(const Shape& s, std::int64_t heads) {
  return s.three_d ? Dims{kTokens, heads, s.head_size} : Dims{kTokens, heads * s.head_size};
}

using Param = std::tuple<DataType, bool, Layout, Shape, DataType>;

class RotaryEmbeddingTest : public ::testing::TestWithParam<Param> {};

TEST_P(RotaryEmbeddingTest, MatchesFloat64Reference) {
  const auto [dtype, neox, layout, s, pos_dtype] = GetParam();
  std::mt19937_64 rng(7);
  auto positions =
      testing::random_tensor({kTokens}, pos_dtype, rng, layout, 0, static_cast<double>(kMaxPos));
  auto cache = testing::rotary_cache(kMaxPos, s.rot_dim, dtype, layout);
  auto query = testing::random_tensor(operand_shape(s, s.heads), dtype, rng, layout);
  auto key = testing::random_tensor(operand_shape(s, s.kv_heads), dtype, rng, layout);
  const auto expected_q = testing::rotary_reference(query, positions, cache, s.head_size, neox);
  const auto expected_k = testing::rotary_reference(key, positions, cache, s.head_size, neox);
  const auto tol = testing::tolerance_for(dtype);

  // Out of place: the inputs stay as they were, the outputs get the rotation and the tail.
  const auto q_before = testing::snapshot(query);
  auto q_out = testing::poisoned(query.view().shape(), dtype, layout);
  auto k_out = testing::poisoned(key.view().shape(), dtype, layout);
  const std::int64_t rotary_dim = s.rot_dim == s.head_size ? -1 : s.rot_dim;
  rotary_embedding(positions, query, key, s.head_size, cache, neox, rotary_dim, q_out, k_out);
  EXPECT_EQ(testing::compare(q_out.view(), expected_q, tol), "");
  EXPECT_EQ(testing::compare(k_out.view(), expected_k, tol), "");
  EXPECT_EQ(testing::snapshot(query), q_before);

  // In place gives the same bits.
  rotary_embedding(positions, query, key, s.head_size, cache, neox);
  EXPECT_EQ(testing::to_doubles(query.view()), testing::to_doubles(q_out.view()));
  EXPECT_EQ(testing::to_doubles(key.view()), testing::to_doubles(k_out.view()));
}

INSTANTIATE_TEST_SUITE_P(
    StylesShapesDtypes, RotaryEmbeddingTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Bool(), ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::Values(Shape{4, 2, 64, 64, false}, Shape{3, 1, 80, 32, true},
                                         Shape{2, 2, 10, 6, false}, Shape{1, 1, 2, 2, true}),
                       ::testing::Values(DataType::kInt64)));

INSTANTIATE_TEST_SUITE_P(Int32Positions, RotaryEmbeddingTest,
                         ::testing::Combine(::testing::Values(DataType::kFloat32),
                                            ::testing::Bool(),
                                            ::testing::Values(Layout::kContiguous),
                                            ::testing::Values(Shape{2, 1, 18, 18, true}),
                                            ::testing::Values(DataType::kInt32)));

TEST(RotaryEmbedding, NoKeyAndCacheOfAnotherDtype) {
  std::mt19937_64 rng(3);
  auto positions =
      testing::random_tensor({kTokens}, DataType::kInt32, rng, Layout::kContiguous, 0, kMaxPos);
  auto cache = testing::rotary_cache(kMaxPos, 16, DataType::kFloat32, Layout::kContiguous);
  auto query = testing::random_tensor({kTokens, 2, 16}, DataType::kBFloat16, rng);
  const auto expected = testing::rotary_reference(query, positions, cache, 16, true);
  rotary_embedding(positions, query, Tensor(), 16, cache, true);
  EXPECT_EQ(testing::compare(query.view(), expected, testing::tolerance_for(DataType::kBFloat16)),
            "");
}

TEST(RotaryEmbedding, InPlaceOnViewsOfOneFusedQkvBuffer) {
  // vLLM splits the fused QKV projection [T, (H + 2 Hkv)·D] into q, k, v views and rotates q
  // and k in place: their byte ranges interleave, their elements do not.
  std::mt19937_64 rng(9);
  constexpr std::int64_t kD = 16, kWidth = (4 + 2 + 2) * kD;
  auto qkv = testing::random_tensor({kTokens, kWidth}, DataType::kFloat16, rng);
  const Tensor q = qkv.view().slice(1, 0, 4 * kD);
  const Tensor k = qkv.view().slice(1, 4 * kD, 2 * kD);
  auto positions =
      testing::random_tensor({kTokens}, DataType::kInt64, rng, Layout::kContiguous, 0, kMaxPos);
  auto cache = testing::rotary_cache(kMaxPos, kD, DataType::kFloat32, Layout::kContiguous);
  const auto expected_q = testing::rotary_reference(q, positions, cache, kD, true);
  const auto expected_k = testing::rotary_reference(k, positions, cache, kD, true);
  const auto v_before = testing::to_doubles(qkv.view().slice(1, 6 * kD, 2 * kD));
  rotary_embedding(positions, q, k, kD, cache, true);
  const auto tol = testing::tolerance_for(DataType::kFloat16);
  EXPECT_EQ(testing::compare(q, expected_q, tol), "");
  EXPECT_EQ(testing::compare(k, expected_k, tol), "");
  EXPECT_EQ(testing::to_doubles(qkv.view().slice(1, 6 * kD, 2 * kD)), v_before);
  // An output that really shares elements with key is still refused.
  const Tensor shifted = qkv.view().slice(1, kD, 4 * kD);
  expect_rejected([&] { rotary_embedding(positions, q, k, kD, cache, true, -1, shifted, k); }, qkv,
                  "query_out");
}

TEST(RotaryEmbedding, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(5);
  auto cache = testing::rotary_cache(kMaxPos, 8, DataType::kFloat32, Layout::kContiguous);
  auto make_positions = [&] {
    return testing::random_tensor({kTokens}, DataType::kInt64, rng, Layout::kContiguous, 0,
                                  kMaxPos);
  };
  auto positions = make_positions();
  auto query = testing::random_tensor({kTokens, 24}, DataType::kFloat32, rng);
  auto out = testing::poisoned({kTokens, 24}, DataType::kFloat32);
  const RotaryEmbedding op(positions, query, Tensor(), 8, cache, false, 8, out, Tensor());
  for (int round = 0; round < 3; ++round) {
    auto pos = make_positions();
    auto q = testing::random_tensor({kTokens, 24}, DataType::kFloat32, rng);
    auto o = testing::poisoned({kTokens, 24}, DataType::kFloat32);
    op(pos, q, Tensor(), cache, o, Tensor());
    EXPECT_EQ(testing::compare(o.view(), testing::rotary_reference(q, pos, cache, 8, false),
                               testing::tolerance_for(DataType::kFloat32)),
              "");
  }
  auto other = testing::random_tensor({kTokens, 16}, DataType::kFloat32, rng);
  EXPECT_THROW(op(positions, other, Tensor(), cache, out, Tensor()), Error);
}

TEST(RotaryEmbedding, RejectsBadInputs) {
  std::mt19937_64 rng(2);
  auto positions =
      testing::random_tensor({kTokens}, DataType::kInt64, rng, Layout::kContiguous, 0, kMaxPos);
  auto cache = testing::rotary_cache(kMaxPos, 8, DataType::kFloat32, Layout::kContiguous);
  auto query = testing::random_tensor({kTokens, 2, 8}, DataType::kFloat32, rng);
  auto key = testing::random_tensor({kTokens, 1, 8}, DataType::kFloat32, rng);
  auto q_out = testing::poisoned({kTokens, 2, 8}, DataType::kFloat32);
  auto k_out = testing::poisoned({kTokens, 1, 8}, DataType::kFloat32);
  const std::vector<const TensorStorage*> outs{&q_out, &k_out};
  const auto call = [&](const Tensor& pos, const Tensor& q, const Tensor& k, std::int64_t head,
                        const Tensor& c, std::int64_t rot, const Tensor& qo, const Tensor& ko) {
    return [=] { rotary_embedding(pos, q, k, head, c, true, rot, qo, ko); };
  };
  // A position past the cache, after tokens that would already have been rotated.
  std::vector<double> p = testing::to_doubles(positions);
  p.back() = kMaxPos;
  testing::from_doubles(positions, p);
  expect_rejected(call(positions, query, key, 8, cache, -1, q_out, k_out), outs, "positions",
                  ErrorKind::kInvalidArgument, {"position 40", "token 4", "[0, 40)"});
  // ... and in place: the inputs are the outputs.
  expect_rejected([&] { rotary_embedding(positions, query, key, 8, cache, true); },
                  std::vector<const TensorStorage*>{&query, &key}, "positions");
  p.back() = 1;
  testing::from_doubles(positions, p);
  expect_rejected(call(positions, query, key, 6, cache, -1, q_out, k_out), outs, "query");
  expect_rejected(call(positions, query, key, 8, cache, 4, q_out, k_out), outs, "rotary_dim");
  auto key16 = testing::random_tensor({kTokens, 1, 8}, DataType::kFloat16, rng);
  expect_rejected(call(positions, query, key16, 8, cache, -1, q_out, k_out), outs, "key",
                  ErrorKind::kInvalidType);
  auto short_pos =
      testing::random_tensor({kTokens - 1}, DataType::kInt64, rng, Layout::kContiguous, 0, kMaxPos);
  expect_rejected(call(short_pos, query, key, 8, cache, -1, q_out, k_out), outs, "query");
  auto float_pos = testing::random_tensor({kTokens}, DataType::kFloat32, rng);
  expect_rejected(call(float_pos, query, key, 8, cache, -1, q_out, k_out), outs, "positions",
                  ErrorKind::kInvalidType);
  // query_out over key; key_out without key.
  expect_rejected(call(positions, query, key, 8, cache, -1, key, k_out), outs, "query_out");
  expect_rejected(call(positions, query, Tensor(), 8, cache, -1, q_out, k_out), outs, "key_out");
  auto odd_cache = testing::rotary_cache(kMaxPos, 8, DataType::kFloat32, Layout::kContiguous);
  const Tensor cache_3 = odd_cache.view().slice(1, 0, 3);
  expect_rejected(call(positions, query, key, 8, cache_3, -1, q_out, k_out), outs, "rotary_dim");
}

// An int64 position beyond int32 (or below) is out of range, never read as its low 32 bits
// (a valid row here), contiguous or strided positions.
TEST(RotaryEmbedding, Int64PositionsBeyondInt32AreRefused) {
  constexpr std::int64_t k2To32 = std::int64_t{1} << 32;
  std::mt19937_64 rng(4);
  auto cache = testing::rotary_cache(kMaxPos, 8, DataType::kFloat32, Layout::kContiguous);
  auto query = testing::random_tensor({kTokens, 2, 8}, DataType::kFloat32, rng);
  auto key = testing::random_tensor({kTokens, 1, 8}, DataType::kFloat32, rng);
  auto q_out = testing::poisoned({kTokens, 2, 8}, DataType::kFloat32);
  auto k_out = testing::poisoned({kTokens, 1, 8}, DataType::kFloat32);
  const std::vector<const TensorStorage*> outs{&q_out, &k_out};
  for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
    for (std::int64_t far : {k2To32 + 3, 3 - k2To32}) {
      auto positions = testing::poisoned({kTokens}, DataType::kInt64, layout);
      for (std::int64_t t = 0; t < kTokens; ++t) {
        positions.view().data_as<std::int64_t>()[t * positions.view().stride(0)] = t == 2 ? far : t;
      }
      expect_rejected(
          [&] { rotary_embedding(positions, query, key, 8, cache, true, -1, q_out, k_out); }, outs,
          "positions", ErrorKind::kInvalidArgument, {"position " + std::to_string(far), "token 2"});
    }
  }
}

// NaN (either sign) and ±inf in query, key and the cache give what float64 gives (a NaN or inf
// reaches its rotation pair, inf·sin 0 is NaN; the unrotated tail keeps its values), both styles,
// full and partial rotary, every float dtype.
TEST(RotaryEmbedding, NonFiniteValuesPropagate) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (const bool neox : {true, false}) {
      for (const Shape& s : {Shape{4, 2, 64, 64, false}, Shape{3, 1, 80, 32, true}}) {
        SCOPED_TRACE(::testing::Message() << name_of(dtype) << " neox " << neox << " ");
        std::mt19937_64 rng(13);
        auto positions = testing::random_tensor({kTokens}, DataType::kInt64, rng,
                                                Layout::kContiguous, 0, kMaxPos);
        std::vector<double> pos = testing::to_doubles(positions);
        pos[0] = 0, pos[1] = 1;  // sin = 0 for every frequency at position 0
        testing::from_doubles(positions, pos);
        auto cache = testing::rotary_cache(kMaxPos, s.rot_dim, dtype, Layout::kContiguous);
        std::vector<double> table = testing::to_doubles(cache);
        table[static_cast<std::size_t>(s.rot_dim + 1)] = NAN;  // position 1: a NaN cos
        table[static_cast<std::size_t>(s.rot_dim + s.rot_dim / 2 + 3)] = INFINITY;  // an inf sin
        testing::from_doubles(cache, table);
        auto query = testing::random_nonfinite_tensor(operand_shape(s, s.heads), dtype, rng,
                                                      Layout::kStrided, 16);
        auto key = testing::random_nonfinite_tensor(operand_shape(s, s.kv_heads), dtype, rng,
                                                    Layout::kContiguous, 16);
        const auto expected_q =
            testing::rotary_reference(query, positions, cache, s.head_size, neox);
        const auto expected_k = testing::rotary_reference(key, positions, cache, s.head_size, neox);
        auto q_out = testing::poisoned(query.view().shape(), dtype);
        auto k_out = testing::poisoned(key.view().shape(), dtype);
        const std::int64_t rotary_dim = s.rot_dim == s.head_size ? -1 : s.rot_dim;
        rotary_embedding(positions, query, key, s.head_size, cache, neox, rotary_dim, q_out, k_out);
        const auto tol = testing::tolerance_for(dtype);
        EXPECT_EQ(testing::compare(q_out.view(), expected_q, tol), "");
        EXPECT_EQ(testing::compare(k_out.view(), expected_k, tol), "");
      }
    }
  }
}

}  // namespace
}  // namespace tileops::ops
