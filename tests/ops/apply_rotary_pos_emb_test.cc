// apply_rotary_pos_emb against a float64 reference: per-frequency cos/sin halves (vLLM) with
// full and partial rotary, per-element tables (Hugging Face) in both styles, every float dtype,
// strided views, in place, the same bits as rotary_embedding for gathered cache rows, the class
// form and bad inputs.
#include "tileops/ops/apply_rotary_pos_emb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/rotary_reference.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/rotary_embedding.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

constexpr std::int64_t kTokens = 7;

// [T, c] tables: per frequency (c = rot/2) or per element in the style's layout (c = rot).
std::pair<TensorStorage, TensorStorage> tables(std::int64_t rot, bool per_element, bool neox,
                                               DataType dtype, Layout layout,
                                               std::vector<double>& angles) {
  const std::int64_t half = rot / 2;
  const std::int64_t width = per_element ? rot : half;
  std::vector<double> c(static_cast<std::size_t>(kTokens * width));
  std::vector<double> s(c.size());
  angles.assign(static_cast<std::size_t>(kTokens * half), 0.0);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> angle(-3.0, 3.0);
  for (std::int64_t t = 0; t < kTokens; ++t) {
    for (std::int64_t i = 0; i < half; ++i) {
      const double a = angle(rng);
      angles[t * half + i] = a;
      for (std::int64_t j :
           per_element ? std::vector<std::int64_t>{neox ? i : 2 * i, neox ? i + half : 2 * i + 1}
                       : std::vector<std::int64_t>{i}) {
        c[t * width + j] = std::cos(a);
        s[t * width + j] = std::sin(a);
      }
    }
  }
  std::pair<TensorStorage, TensorStorage> result{
      testing::poisoned({kTokens, width}, dtype, layout),
      testing::poisoned({kTokens, width}, dtype, layout)};
  testing::from_doubles(result.first, c);
  testing::from_doubles(result.second, s);
  return result;
}

using Param = std::tuple<DataType, bool, Layout, bool>;

class ApplyRotaryPosEmbTest : public ::testing::TestWithParam<Param> {};

TEST_P(ApplyRotaryPosEmbTest, MatchesFloat64Reference) {
  const auto [dtype, neox, layout, per_element] = GetParam();
  std::mt19937_64 rng(4);
  for (const auto& [head_size, rot] : {std::pair<std::int64_t, std::int64_t>{64, 64}, {40, 24}}) {
    if (per_element && rot != head_size) continue;  // per-element tables cover whole heads
    std::vector<double> angles;
    // Tables rounded to the dtype: the reference uses the rounded values.
    auto [cos, sin] = tables(rot, per_element, neox, dtype, layout, angles);
    const std::vector<double> cv = testing::to_doubles(cos.view());
    const std::vector<double> sv = testing::to_doubles(sin.view());
    const std::int64_t width = cos.view().size(1);
    const auto cos_sin = [&](std::int64_t t, std::int64_t i) {
      const std::int64_t j = per_element ? (neox ? i : 2 * i) : i;
      return std::pair{cv[t * width + j], sv[t * width + j]};
    };
    auto query = testing::random_tensor({kTokens, 3 * head_size}, dtype, rng, layout);
    auto key = testing::random_tensor({kTokens, 1, head_size}, dtype, rng, layout);
    const auto expected_q = testing::rotate_reference(query, head_size, rot, neox, cos_sin);
    const auto expected_k = testing::rotate_reference(key, head_size, rot, neox, cos_sin);
    auto q_out = testing::poisoned(query.view().shape(), dtype, layout);
    auto k_out = testing::poisoned(key.view().shape(), dtype, layout);
    apply_rotary_pos_emb(query, key, cos, sin, head_size, neox, q_out, k_out);
    const auto tol = testing::tolerance_for(dtype);
    EXPECT_EQ(testing::compare(q_out.view(), expected_q, tol), "") << head_size << " " << rot;
    EXPECT_EQ(testing::compare(k_out.view(), expected_k, tol), "") << head_size << " " << rot;
    apply_rotary_pos_emb(query, key, cos, sin, head_size, neox, Tensor(), Tensor());
    EXPECT_EQ(testing::to_doubles(query.view()), testing::to_doubles(q_out.view()));
    EXPECT_EQ(testing::to_doubles(key.view()), testing::to_doubles(k_out.view()));
  }
}

INSTANTIATE_TEST_SUITE_P(
    StylesDtypesForms, ApplyRotaryPosEmbTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Bool(), ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::Bool()));

TEST(ApplyRotaryPosEmb, GatheredCacheRowsGiveRotaryEmbeddingsBits) {
  std::mt19937_64 rng(8);
  constexpr std::int64_t kMaxPos = 50;
  auto cache = testing::rotary_cache(kMaxPos, 32, DataType::kFloat32, Layout::kContiguous);
  auto positions =
      testing::random_tensor({kTokens}, DataType::kInt64, rng, Layout::kContiguous, 0, kMaxPos);
  auto cos = testing::poisoned({kTokens, 16}, DataType::kFloat32);
  auto sin = testing::poisoned({kTokens, 16}, DataType::kFloat32);
  const std::vector<double> table = testing::to_doubles(cache.view());
  const std::vector<double> pos = testing::to_doubles(positions.view());
  std::vector<double> c, s;
  for (std::int64_t t = 0; t < kTokens; ++t) {
    const auto row = table.begin() + static_cast<std::int64_t>(pos[t]) * 32;
    c.insert(c.end(), row, row + 16);
    s.insert(s.end(), row + 16, row + 32);
  }
  testing::from_doubles(cos, c);
  testing::from_doubles(sin, s);
  for (bool neox : {true, false}) {
    auto query = testing::random_tensor({kTokens, 4, 32}, DataType::kBFloat16, rng);
    auto a = testing::poisoned({kTokens, 4, 32}, DataType::kBFloat16);
    auto b = testing::poisoned({kTokens, 4, 32}, DataType::kBFloat16);
    apply_rotary_pos_emb(query, Tensor(), cos, sin, 32, neox, a, Tensor());
    rotary_embedding(positions, query, Tensor(), 32, cache, neox, -1, b, Tensor());
    EXPECT_EQ(testing::snapshot(a), testing::snapshot(b));
  }
}

TEST(ApplyRotaryPosEmb, CachedInstanceAndBadInputs) {
  std::mt19937_64 rng(6);
  auto cos = testing::random_tensor({kTokens, 4}, DataType::kFloat32, rng);
  auto sin = testing::random_tensor({kTokens, 4}, DataType::kFloat32, rng);
  auto query = testing::random_tensor({kTokens, 16}, DataType::kFloat32, rng);
  auto out = testing::poisoned({kTokens, 16}, DataType::kFloat32);
  const ApplyRotaryPosEmb op(query, Tensor(), cos, sin, 8, true, out, Tensor());
  for (int round = 0; round < 2; ++round) {
    auto q = testing::random_tensor({kTokens, 16}, DataType::kFloat32, rng);
    auto c = testing::random_tensor({kTokens, 4}, DataType::kFloat32, rng);
    auto o = testing::poisoned({kTokens, 16}, DataType::kFloat32);
    op(q, Tensor(), c, sin, o, Tensor());
    const std::vector<double> cv = testing::to_doubles(c.view());
    const std::vector<double> sv = testing::to_doubles(sin.view());
    EXPECT_EQ(
        testing::compare(o.view(),
                         testing::rotate_reference(q, 8, 8, true,
                                                   [&](std::int64_t t, std::int64_t i) {
                                                     return std::pair{cv[t * 4 + i], sv[t * 4 + i]};
                                                   }),
                         testing::tolerance_for(DataType::kFloat32)),
        "");
  }
  auto wide = testing::random_tensor({kTokens, 6}, DataType::kFloat32, rng);
  expect_rejected(
      [&] { apply_rotary_pos_emb(query, Tensor(), wide, wide, 8, true, out, Tensor()); }, out,
      "cos");
  expect_rejected([&] { apply_rotary_pos_emb(query, Tensor(), cos, wide, 8, true, out, Tensor()); },
                  out, "sin");
  auto short_cos = testing::random_tensor({kTokens - 1, 4}, DataType::kFloat32, rng);
  expect_rejected(
      [&] { apply_rotary_pos_emb(query, Tensor(), short_cos, short_cos, 8, true, out, Tensor()); },
      out, "query");
  auto int_cos = testing::random_tensor({kTokens, 4}, DataType::kInt32, rng);
  expect_rejected(
      [&] { apply_rotary_pos_emb(query, Tensor(), int_cos, sin, 8, true, out, Tensor()); }, out,
      "cos", ErrorKind::kInvalidType);
  expect_rejected([&] { apply_rotary_pos_emb(query, Tensor(), cos, sin, 8, true, cos, Tensor()); },
                  cos, "query_out");
}

// NaN (either sign) and ±inf in query, key, cos and sin give what float64 gives, both styles,
// per-frequency and per-element tables, every float dtype.
TEST(ApplyRotaryPosEmb, NonFiniteValuesPropagate) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (const bool neox : {true, false}) {
      for (const bool per_element : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << name_of(dtype) << " neox " << neox << " per_element " << per_element);
        const std::int64_t head_size = 40, rot = per_element ? 40 : 24;
        std::vector<double> angles;
        auto [cos, sin] = tables(rot, per_element, neox, dtype, Layout::kContiguous, angles);
        std::vector<double> cv = testing::to_doubles(cos.view());
        std::vector<double> sv = testing::to_doubles(sin.view());
        const std::int64_t width = cos.view().size(1);
        // Table entries of (token, frequency i): both elements of the pair when per element.
        const auto set = [&](std::vector<double>& table, std::int64_t t, std::int64_t i, double x) {
          const std::int64_t half = rot / 2;
          for (const std::int64_t j :
               per_element
                   ? std::vector<std::int64_t>{neox ? i : 2 * i, neox ? i + half : 2 * i + 1}
                   : std::vector<std::int64_t>{i}) {
            table[static_cast<std::size_t>(t * width + j)] = x;
          }
        };
        set(cv, 1, 2, NAN), set(sv, 0, 3, INFINITY), set(sv, 2, 0, 0.0);
        testing::from_doubles(cos, cv), testing::from_doubles(sin, sv);
        const auto cos_sin = [&](std::int64_t t, std::int64_t i) {
          const std::int64_t j = per_element ? (neox ? i : 2 * i) : i;
          return std::pair{cv[t * width + j], sv[t * width + j]};
        };
        std::mt19937_64 rng(6);
        auto query = testing::random_nonfinite_tensor({kTokens, 3 * head_size}, dtype, rng,
                                                      Layout::kStrided, 16);
        auto key = testing::random_nonfinite_tensor({kTokens, 1, head_size}, dtype, rng,
                                                    Layout::kContiguous, 16);
        const auto expected_q = testing::rotate_reference(query, head_size, rot, neox, cos_sin);
        const auto expected_k = testing::rotate_reference(key, head_size, rot, neox, cos_sin);
        auto q_out = testing::poisoned(query.view().shape(), dtype);
        auto k_out = testing::poisoned(key.view().shape(), dtype);
        apply_rotary_pos_emb(query, key, cos, sin, head_size, neox, q_out, k_out);
        const auto tol = testing::tolerance_for(dtype);
        EXPECT_EQ(testing::compare(q_out.view(), expected_q, tol), "");
        EXPECT_EQ(testing::compare(k_out.view(), expected_k, tol), "");
      }
    }
  }
}

}  // namespace
}  // namespace tileops::ops
