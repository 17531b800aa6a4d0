// top_k_top_p_sampler and topk_topp_sampling: draws follow softmax(logits) (chi-square at a
// fixed seed), k = 1 is argmax, top-k and top-p sets are exact (tokens outside never drawn, the
// boundary token drawn), per-row k and p, determinism across calls and thread counts, every
// float dtype and strided logits, int32 and int64 tokens, the class forms and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/top_k_top_p_sampler.h"
#include "tileops/ops/topk_topp_sampling.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

// The chi-square statistic of `counts` against probabilities `expected` (cells with p = 0 must
// have no count: checked by the caller).
double chi_square(const std::vector<std::int64_t>& counts, const std::vector<double>& expected) {
  const double n = static_cast<double>(std::accumulate(counts.begin(), counts.end(), 0LL));
  double x2 = 0.0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0.0) continue;
    const double e = n * expected[i];
    x2 += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
  }
  return x2;
}

// 99.9% quantiles of chi-square with 1..7 degrees of freedom.
constexpr double kChi2Critical[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32};

// Every row the same logits (a stride-0 row dim), sampled `rows` times in one call.
std::vector<std::int64_t> draw_counts(const std::vector<double>& logits, std::int64_t rows,
                                      std::int64_t k, double p, std::uint64_t seed) {
  const auto v = static_cast<std::int64_t>(logits.size());
  std::vector<float> row(logits.begin(), logits.end());
  const Tensor broadcast(row.data(), Dims{rows, v}, Dims{0, 1}, DataType::kFloat32);
  auto out = testing::poisoned({rows}, DataType::kInt64);
  top_k_top_p_sampler(broadcast, k, p, seed, out);
  std::vector<std::int64_t> counts(logits.size());
  for (double token : testing::to_doubles(out.view())) ++counts.at(static_cast<std::size_t>(token));
  return counts;
}

std::vector<double> renormalised(std::vector<double> probs, const std::set<int>& kept) {
  double mass = 0.0;
  for (int i : kept) mass += probs[i];
  for (std::size_t i = 0; i < probs.size(); ++i) {
    probs[i] = kept.count(static_cast<int>(i)) ? probs[i] / mass : 0.0;
  }
  return probs;
}

TEST(TopKTopPSampler, MatchesMultinomialAndExactTopKTopPSets) {
  // probabilities 0.3, 0.25, 0.2, 0.12, 0.08, 0.05 (shuffled positions)
  const std::vector<double> probs{0.12, 0.3, 0.05, 0.25, 0.08, 0.2};
  std::vector<double> logits;
  for (double q : probs) logits.push_back(std::log(q) + 1.5);
  constexpr std::int64_t kDraws = 20000;
  struct Filter {
    std::int64_t k;
    double p;
    std::set<int> kept;
  };
  const std::vector<Filter> filters{
      {6, 1.0, {0, 1, 2, 3, 4, 5}},  // k = V and p = 1: plain multinomial
      {0, 1.0, {0, 1, 2, 3, 4, 5}},
      {3, 1.0, {1, 3, 5}},
      {0, 0.5, {1, 3}},      // 0.3 < 0.5 <= 0.55: boundary token 3 included
      {0, 0.56, {1, 3, 5}},  // 0.55 < 0.56
      {4, 0.8, {1, 3, 5}},   // top-4 mass 0.87; 0.8·0.87 = 0.696 <= 0.75
      {2, 0.99, {1, 3}},
  };
  for (const Filter& f : filters) {
    const auto counts = draw_counts(logits, kDraws, f.k, f.p, 1234);
    for (int i = 0; i < 6; ++i) {
      if (f.kept.count(i)) {
        EXPECT_GT(counts[i], 0) << "token " << i << " k " << f.k << " p " << f.p;
      } else {
        EXPECT_EQ(counts[i], 0) << "token " << i << " k " << f.k << " p " << f.p;
      }
    }
    const double x2 = chi_square(counts, renormalised(probs, f.kept));
    EXPECT_LT(x2, kChi2Critical[f.kept.size() - 1]) << "k " << f.k << " p " << f.p;
  }
}

using Param = std::tuple<DataType, Layout>;
class SamplerDtypeTest : public ::testing::TestWithParam<Param> {};

TEST_P(SamplerDtypeTest, KOneIsArgmaxAndSeedsAreDeterministic) {
  const auto [dtype, layout] = GetParam();
  std::mt19937_64 rng(31);
  constexpr std::int64_t kRows = 9, kVocab = 1001;
  auto logits = testing::random_tensor({kRows, kVocab}, dtype, rng, layout, -4, 4);
  const std::vector<double> values = testing::to_doubles(logits.view());
  auto out = testing::poisoned({kRows}, DataType::kInt64, layout);
  top_k_top_p_sampler(logits, 1, 1.0, 99, out);
  const std::vector<double> tokens = testing::to_doubles(out.view());
  for (std::int64_t r = 0; r < kRows; ++r) {
    const auto row = values.begin() + r * kVocab;
    EXPECT_EQ(tokens[r], static_cast<double>(std::max_element(row, row + kVocab) - row));
  }
  // Same seed, same tokens, whatever the thread count; another seed, other tokens.
  ThreadPool one(1), three(3);
  Context ctx1, ctx3;
  ctx1.thread_pool = &one;
  ctx3.thread_pool = &three;
  auto a = testing::poisoned({kRows}, DataType::kInt64);
  auto b = testing::poisoned({kRows}, DataType::kInt64);
  auto c = testing::poisoned({kRows}, DataType::kInt64);
  top_k_top_p_sampler(logits, 50, 0.9, 7, a, ctx1);
  top_k_top_p_sampler(logits, 50, 0.9, 7, b, ctx3);
  top_k_top_p_sampler(logits, 50, 0.9, 8, c, ctx3);
  EXPECT_EQ(testing::to_doubles(a.view()), testing::to_doubles(b.view()));
  EXPECT_NE(testing::to_doubles(a.view()), testing::to_doubles(c.view()));
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, SamplerDtypeTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided)));

TEST(TopKTopPSampler, TopKOverManyBlocksKeepsLowerIndicesOnTies) {
  // Six tokens of equal weight spread over the 16-token blocks the heap scan skips, among
  // lighter ones: top-5 keeps the five lowest of them, and every draw is one of those five.
  constexpr std::int64_t kVocab = 203;
  std::vector<double> logits(kVocab, 0.0);
  for (int i = 0; i < kVocab; ++i) logits[static_cast<std::size_t>(i)] = -0.01 * (i % 17);
  const std::set<int> kept{3, 40, 47, 150, 190};
  for (int i : {3, 40, 47, 150, 190, 200}) logits[static_cast<std::size_t>(i)] = 5.0;
  const auto counts = draw_counts(logits, 4000, 5, 1.0, 77);
  for (int i = 0; i < kVocab; ++i) {
    if (kept.count(i)) {
      EXPECT_GT(counts[static_cast<std::size_t>(i)], 600) << "token " << i;
    } else {
      EXPECT_EQ(counts[static_cast<std::size_t>(i)], 0) << "token " << i;
    }
  }
}

TEST(TopKTopPSampler, PerRowKAndP) {
  // Row r keeps the top r+1 tokens (k) or its nucleus (p); every draw must stay inside.
  constexpr std::int64_t kRows = 4, kVocab = 8;
  std::vector<float> row{4, 3, 2, 1, 0, -1, -2, -3};  // token i is the i-th heaviest
  std::vector<float> rows;
  for (std::int64_t r = 0; r < kRows; ++r) rows.insert(rows.end(), row.begin(), row.end());
  const Tensor logits(rows.data(), Dims{kRows, kVocab}, DataType::kFloat32);
  std::vector<std::int32_t> k{1, 2, 3, 0};
  std::vector<float> p{1.0f, 1.0f, 0.99f, 0.7f};
  const Tensor kt(k.data(), Dims{kRows}, DataType::kInt32);
  const Tensor pt(p.data(), Dims{kRows}, DataType::kFloat32);
  // softmax of row: 0.6439 0.2369 0.0871 0.0321 ...: p 0.7 keeps {0, 1}; top-3 at 0.99 keeps 3.
  const std::vector<int> allowed{1, 2, 3, 2};
  std::vector<std::set<int>> seen(kRows);
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    auto out = testing::poisoned({kRows}, DataType::kInt64);
    top_k_top_p_sampler(logits, kt, pt, seed, out);
    const std::vector<double> tokens = testing::to_doubles(out.view());
    for (std::int64_t r = 0; r < kRows; ++r) {
      EXPECT_LT(tokens[r], allowed[r]) << "row " << r;
      seen[r].insert(static_cast<int>(tokens[r]));
    }
  }
  for (std::int64_t r = 0; r < kRows; ++r) {
    EXPECT_EQ(static_cast<int>(seen[r].size()), allowed[r]) << "row " << r;
  }
  // One k for every row (a 1-element tensor).
  std::vector<std::int64_t> k1{1};
  auto out = testing::poisoned({kRows}, DataType::kInt64);
  top_k_top_p_sampler(logits, Tensor(k1.data(), Dims{1}, DataType::kInt64), Tensor(), 5, out);
  EXPECT_EQ(testing::to_doubles(out.view()), std::vector<double>(kRows, 0.0));
}

TEST(TopkToppSampling, ProbabilitiesGiveTheLogitsTokens) {
  std::mt19937_64 rng(41);
  constexpr std::int64_t kRows = 64, kVocab = 50;
  auto logits =
      testing::random_tensor({kRows, kVocab}, DataType::kFloat32, rng, Layout::kContiguous, -3, 3);
  const std::vector<double> x = testing::to_doubles(logits.view());
  std::vector<double> probs(x.size());
  for (std::int64_t r = 0; r < kRows; ++r) {
    double sum = 0.0;
    for (std::int64_t i = 0; i < kVocab; ++i) sum += std::exp(x[r * kVocab + i]);
    for (std::int64_t i = 0; i < kVocab; ++i)
      probs[r * kVocab + i] = std::exp(x[r * kVocab + i]) / sum;
  }
  auto p = testing::poisoned({kRows, kVocab}, DataType::kFloat32, Layout::kStrided);
  testing::from_doubles(p, probs);
  auto from_logits = testing::poisoned({kRows}, DataType::kInt64);
  auto from_probs = testing::poisoned({kRows}, DataType::kInt32);
  top_k_top_p_sampler(logits, 10, 0.8, 3, from_logits);
  topk_topp_sampling(p, 10, 0.8, 3, from_probs);
  EXPECT_EQ(testing::to_doubles(from_logits.view()), testing::to_doubles(from_probs.view()));

  const TopkToppSampling op(p, 10, 0.8, from_probs);
  auto again = testing::poisoned({kRows}, DataType::kInt32);
  op(p, 3, again);
  EXPECT_EQ(testing::to_doubles(again.view()), testing::to_doubles(from_probs.view()));
  const TopKTopPSampler sampler(logits, Tensor(), Tensor(), from_logits);
  auto plain = testing::poisoned({kRows}, DataType::kInt64);
  sampler(logits, Tensor(), Tensor(), 3, plain);
  top_k_top_p_sampler(logits, 0, 1.0, 3, from_logits);
  EXPECT_EQ(testing::to_doubles(plain.view()), testing::to_doubles(from_logits.view()));
}

// Both samplers write int32 or int64 tokens (InfiniOps' contract is int32, torch's int64): the
// same tokens either way, contiguous or strided, free and class forms. A per-row int64 k beyond
// int32 is read whole (2^32 + 1 >= V: off), not as its low half (1: argmax).
TEST(TopKTopPSampler, TokensOfEitherWidth) {
  std::mt19937_64 rng(61);
  constexpr std::int64_t kRows = 12, kVocab = 257;
  auto logits =
      testing::random_tensor({kRows, kVocab}, DataType::kFloat32, rng, Layout::kStrided, -3, 3);
  auto probs = testing::random_tensor({kRows, kVocab}, DataType::kFloat32, rng, Layout::kContiguous,
                                      0.01, 1);
  auto logits_ref = testing::poisoned({kRows}, DataType::kInt64);
  auto probs_ref = testing::poisoned({kRows}, DataType::kInt32);
  top_k_top_p_sampler(logits, 40, 0.9, 5, logits_ref);
  topk_topp_sampling(probs, 40, 0.9, 5, probs_ref);
  const std::vector<double> want_logits = testing::to_doubles(logits_ref.view());
  const std::vector<double> want_probs = testing::to_doubles(probs_ref.view());
  for (DataType width : {DataType::kInt32, DataType::kInt64}) {
    for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
      SCOPED_TRACE(std::string(name_of(width)) + " " + testing::layout_name(layout));
      auto a = testing::poisoned({kRows}, width, layout);
      top_k_top_p_sampler(logits, 40, 0.9, 5, a);
      EXPECT_EQ(testing::to_doubles(a.view()), want_logits);
      auto b = testing::poisoned({kRows}, width, layout);
      topk_topp_sampling(probs, 40, 0.9, 5, b);
      EXPECT_EQ(testing::to_doubles(b.view()), want_probs);
      auto c = testing::poisoned({kRows}, width, layout);
      const TopKTopPSampler sampler(logits, Tensor(), Tensor(), c);
      sampler(logits, Tensor(), Tensor(), 5, c);
      auto c_ref = testing::poisoned({kRows}, DataType::kInt64);
      top_k_top_p_sampler(logits, 0, 1.0, 5, c_ref);
      EXPECT_EQ(testing::to_doubles(c.view()), testing::to_doubles(c_ref.view()));
      auto d = testing::poisoned({kRows}, width, layout);
      const TopkToppSampling sampling(probs, 40, 0.9, d);
      sampling(probs, 5, d);
      EXPECT_EQ(testing::to_doubles(d.view()), want_probs);
    }
  }
  std::int64_t k_far = (std::int64_t{1} << 32) + 1;
  const Tensor k(&k_far, Dims{1}, DataType::kInt64);
  auto far = testing::poisoned({kRows}, DataType::kInt32);
  auto off = testing::poisoned({kRows}, DataType::kInt32);
  auto argmax = testing::poisoned({kRows}, DataType::kInt32);
  top_k_top_p_sampler(logits, k, Tensor(), 9, far);
  top_k_top_p_sampler(logits, 0, 1.0, 9, off);
  top_k_top_p_sampler(logits, 1, 1.0, 9, argmax);
  EXPECT_EQ(testing::to_doubles(far.view()), testing::to_doubles(off.view()));
  EXPECT_NE(testing::to_doubles(far.view()), testing::to_doubles(argmax.view()));
}

TEST(TopKTopPSampler, RejectsBadInputs) {
  std::mt19937_64 rng(51);
  auto logits = testing::random_tensor({3, 10}, DataType::kFloat32, rng);
  auto out = testing::poisoned({3}, DataType::kInt64);
  std::vector<double> v = testing::to_doubles(logits.view());
  v[25] = std::nan("");
  auto bad = testing::poisoned({3, 10}, DataType::kFloat32);
  testing::from_doubles(bad, v);
  expect_rejected([&] { top_k_top_p_sampler(bad, 0, 1.0, 1, out); }, out, "logits",
                  ErrorKind::kInvalidArgument, {"row 2"});
  std::vector<double> p_values{0.5, 0.0, 0.9};
  auto p = testing::poisoned({3}, DataType::kFloat64);
  testing::from_doubles(p, p_values);
  expect_rejected([&] { top_k_top_p_sampler(logits, Tensor(), p, 1, out); }, out, "p",
                  ErrorKind::kInvalidArgument, {"row 1"});
  expect_rejected([&] { top_k_top_p_sampler(logits, 3, 0.0, 1, out); }, out, "p");
  auto k2 = testing::poisoned({2}, DataType::kInt32);
  expect_rejected([&] { top_k_top_p_sampler(logits, k2, Tensor(), 1, out); }, out, "k");
  auto out16 = testing::poisoned({3}, DataType::kInt16);  // tokens are int32 or int64
  expect_rejected([&] { top_k_top_p_sampler(logits, 3, 0.5, 1, out16); }, out16, "out",
                  ErrorKind::kInvalidType);
  auto out32 = testing::poisoned({3}, DataType::kInt32);
  auto probs = testing::random_tensor({3, 10}, DataType::kFloat32, rng, Layout::kContiguous, 0, 1);
  std::vector<double> pv = testing::to_doubles(probs.view());
  pv[4] = -0.1;
  testing::from_doubles(probs, pv);
  expect_rejected([&] { topk_topp_sampling(probs, 0, 1.0, 1, out32); }, out32, "probs",
                  ErrorKind::kInvalidArgument, {"row 0"});
  expect_rejected([&] { topk_topp_sampling(probs, 0, -1.0, 1, out32); }, out32, "topp");
  expect_rejected([&] { topk_topp_sampling(probs, 0, 1.0, 1, out16); }, out16, "out",
                  ErrorKind::kInvalidType);
}

// Non-finite logits and probabilities have a documented result in every dtype: logits rows
// with a NaN (either sign), a +inf, or only -inf, and probs rows with a NaN or a +inf, are
// kInvalidArgument naming the row, and nothing is written; -inf logits are never drawn.
TEST(TopKTopPSampler, NonFiniteInputs) {
  const double inf = INFINITY;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(name_of(dtype));
    std::mt19937_64 rng(61);
    auto out = testing::poisoned({2}, DataType::kInt64);
    auto out32 = testing::poisoned({2}, DataType::kInt32);
    const auto logits_with = [&](std::int64_t i, double x) {
      std::vector<double> v = testing::to_doubles(testing::random_tensor({2, 40}, dtype, rng));
      v[static_cast<std::size_t>(i)] = x;
      if (x == -inf) std::fill(v.begin() + 40, v.end(), -inf);  // row 1: only -inf
      auto t = testing::poisoned({2, 40}, dtype);
      testing::from_doubles(t, v);
      return t;
    };
    for (const auto& [i, x, row] : {std::tuple<std::int64_t, double, const char*>{47, NAN, "row 1"},
                                    {3, -NAN, "row 0"},
                                    {45, inf, "row 1"},
                                    {0, -inf, "row 1"}}) {
      const auto logits = logits_with(i, x);
      for (std::int64_t k : {0, 5}) {
        expect_rejected([&] { top_k_top_p_sampler(logits, k, 0.9, 1, out); }, out, "logits",
                        ErrorKind::kInvalidArgument, {row});
      }
    }
    // -inf logits in a row with finite ones: never drawn.
    std::vector<double> v(80, -inf);
    v[7] = 1.0, v[40 + 33] = -3.0;
    auto logits = testing::poisoned({2, 40}, dtype);
    testing::from_doubles(logits, v);
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      top_k_top_p_sampler(logits, 0, 1.0, seed, out);
      EXPECT_EQ(testing::to_doubles(out.view()), (std::vector<double>{7, 33}));
    }
    for (const auto& [i, x, row] : {std::tuple<std::int64_t, double, const char*>{41, NAN, "row 1"},
                                    {2, -NAN, "row 0"},
                                    {50, inf, "row 1"}}) {
      std::vector<double> p = testing::to_doubles(
          testing::random_tensor({2, 40}, dtype, rng, Layout::kContiguous, 0.0, 1.0));
      p[static_cast<std::size_t>(i)] = x;
      auto probs = testing::poisoned({2, 40}, dtype);
      testing::from_doubles(probs, p);
      expect_rejected([&] { topk_topp_sampling(probs, 0, 1.0, 1, out32); }, out32, "probs",
                      ErrorKind::kInvalidArgument, {row});
    }
  }
}

}  // namespace
}  // namespace tileops::ops
