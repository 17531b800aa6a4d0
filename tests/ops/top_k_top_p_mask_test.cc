// top_k_top_p_mask against a float64 reference of vLLM's sort-based apply_top_k_top_p (a stable
// ascending sort, -inf below the k-th largest, -inf where the ascending cumulative softmax is
// <= 1 - p but the last): every float dtype, contiguous and strided logits, per-row and shared
// k and p of either dtype, ties, k = 1, k = V, tiny p, p = 1, the heap and the nth_element
// top-k, -inf logits, the class form, thread counts, and bad inputs that write nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/top_k_top_p_mask.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kInfF = std::numeric_limits<float>::infinity();

// The reference's verdict per element: masked, and whether that is within rounding of the
// nucleus boundary (our mass is float32 exp; a token there may go either way).
struct Expected {
  std::vector<bool> masked;
  std::vector<bool> ambiguous;
};

// vLLM's apply_top_k_top_p on one row, in float64.
Expected reference_row(const std::vector<double>& x, std::optional<std::int64_t> k,
                       std::optional<double> p) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<std::int64_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return x[a] < x[b]; });
  std::vector<double> s(x.size());
  for (std::int64_t j = 0; j < n; ++j) s[j] = x[order[j]];
  Expected e{std::vector<bool>(x.size()), std::vector<bool>(x.size())};
  if (k) {
    const double kth = s[n - *k];
    for (double& v : s) v = v < kth ? -kInf : v;
  }
  if (p && s[n - 1] != -kInf) {
    double total = 0.0;
    for (double v : s) total += std::exp(v - s[n - 1]);
    double cumulative = 0.0;
    for (std::int64_t j = 0; j + 1 < n; ++j) {
      cumulative += std::exp(s[j] - s[n - 1]) / total;
      if (std::abs(cumulative - (1.0 - *p)) <= 4e-6) e.ambiguous[order[j]] = true;
      if (cumulative <= 1.0 - *p) s[j] = -kInf;
    }
  }
  for (std::int64_t j = 0; j < n; ++j) e.masked[order[j]] = s[j] == -kInf && x[order[j]] != -kInf;
  return e;
}

// Compares masked logits with the reference of each row; "" when they agree.
std::string check_rows(const std::vector<double>& before, const std::vector<double>& after,
                       std::int64_t rows, std::int64_t vocab,
                       const std::vector<std::optional<std::int64_t>>& k,
                       const std::vector<std::optional<double>>& p) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<double> x(before.begin() + r * vocab, before.begin() + (r + 1) * vocab);
    const Expected e = reference_row(x, k[r], p[r]);
    for (std::int64_t i = 0; i < vocab; ++i) {
      const double got = after[r * vocab + i];
      const bool masked = got == -kInf && x[i] != -kInf;
      if (got != x[i] && got != -kInf) {
        return "row " + std::to_string(r) + " index " + std::to_string(i) + ": " +
               std::to_string(got) + " is neither the logit nor -inf";
      }
      if (masked != e.masked[i] && !e.ambiguous[i]) {
        return "row " + std::to_string(r) + " index " + std::to_string(i) + " (logit " +
               std::to_string(x[i]) + "): " + (masked ? "masked" : "kept") + ", vLLM's algorithm " +
               (e.masked[i] ? "masks" : "keeps") + " it";
      }
    }
  }
  return "";
}

struct Filters {
  std::vector<std::optional<std::int64_t>> k;  // each row given (a tensor), or none (no tensor)
  std::vector<std::optional<double>> p;        // each row given, or none
};

// Runs the operator on a copy of `logits` with per-row k (int64 or int32) and p (float32 or
// float64) tensors, or none, and checks against the reference.
void run_and_check(const TensorStorage& logits, const Filters& f, DataType k_dtype,
                   DataType p_dtype, const Context& ctx = {}) {
  const std::int64_t rows = logits.view().size(0), vocab = logits.view().size(1);
  const std::vector<double> before = testing::to_doubles(logits.view());
  TensorStorage k_t = testing::poisoned({rows}, k_dtype, Layout::kStrided);
  TensorStorage p_t = testing::poisoned({rows}, p_dtype, Layout::kStrided);
  const bool has_k = rows > 0 && f.k[0].has_value(), has_p = rows > 0 && f.p[0].has_value();
  std::vector<double> kv, pv;
  for (std::int64_t r = 0; r < rows; ++r) {
    kv.push_back(has_k ? static_cast<double>(*f.k[r]) : 0.0);
    pv.push_back(has_p ? *f.p[r] : 1.0);
  }
  testing::from_doubles(k_t.view(), kv);
  testing::from_doubles(p_t.view(), pv);
  // p as the dtype rounds it (a float32 p is what the kernel reads).
  Filters used = f;
  const std::vector<double> p_read = testing::to_doubles(p_t.view());
  for (std::int64_t r = 0; r < rows && has_p; ++r) used.p[r] = p_read[r];
  top_k_top_p_mask(logits.view(), has_k ? k_t.view() : Tensor(), has_p ? p_t.view() : Tensor(),
                   ctx);
  const std::string problem =
      check_rows(before, testing::to_doubles(logits.view()), rows, vocab, used.k, used.p);
  EXPECT_EQ(problem, "");
}

class MaskTest : public ::testing::TestWithParam<std::tuple<DataType, Layout>> {};

TEST_P(MaskTest, MatchesVllmAlgorithmOnRandomRows) {
  const auto [dtype, layout] = GetParam();
  std::mt19937_64 rng(7);
  constexpr std::int64_t kRows = 6;
  for (std::int64_t vocab : {1, 2, 7, 33, 1000, 4099}) {
    std::uniform_int_distribution<std::int64_t> any_k(1, vocab);
    std::uniform_real_distribution<double> any_p(0.05, 1.0);
    for (int mode = 0; mode < 4; ++mode) {  // k only, p only, both, neither
      // Wide logits make the nucleus short, narrow ones long; 16-bit dtypes round to ties.
      const double spread = mode == 1 ? 2.0 : 6.0;
      auto logits = testing::random_tensor({kRows, vocab}, dtype, rng, layout, -spread, spread);
      Filters f;
      for (std::int64_t r = 0; r < kRows; ++r) {
        std::optional<std::int64_t> k;
        std::optional<double> p;
        if (mode == 0 || mode == 2) k = r == 0 ? 1 : r == 1 ? vocab : any_k(rng);
        if (mode == 1 || mode == 2) p = r == 2 ? 1.0 : r == 3 ? 1e-7 : any_p(rng);
        f.k.push_back(k);
        f.p.push_back(p);
      }
      SCOPED_TRACE("vocab " + std::to_string(vocab) + " mode " + std::to_string(mode));
      run_and_check(logits, f, mode == 2 ? DataType::kInt32 : DataType::kInt64,
                    mode == 2 ? DataType::kFloat64 : DataType::kFloat32);
    }
  }
}

TEST_P(MaskTest, LargeKTakesTheSelectionPath) {
  const auto [dtype, layout] = GetParam();
  std::mt19937_64 rng(11);
  constexpr std::int64_t kRows = 3, kVocab = 5003;
  auto logits = testing::random_tensor({kRows, kVocab}, dtype, rng, layout, -4, 4);
  run_and_check(logits, {{3000, 1025, 5002}, {0.9, 1.0, 0.5}}, DataType::kInt64,
                DataType::kFloat32);
  auto again = testing::random_tensor({kRows, kVocab}, dtype, rng, layout, -4, 4);
  run_and_check(again, {{3000, 1025, 5002}, {std::nullopt, std::nullopt, std::nullopt}},
                DataType::kInt32, DataType::kFloat32);
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, MaskTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided)));

std::vector<double> masked(std::vector<float> row, const Tensor& k, const Tensor& p) {
  top_k_top_p_mask(
      Tensor(row.data(), Dims{1, static_cast<std::int64_t>(row.size())}, DataType::kFloat32), k, p);
  return {row.begin(), row.end()};
}

TEST(TopKTopPMask, TiesAndBoundaries) {
  std::int64_t k = 2;
  double p = 0.5;
  const Tensor k1(&k, Dims{1}, DataType::kInt64);
  const Tensor p1(&p, Dims{1}, DataType::kFloat64);
  // Ties at the k-th value all survive top-k.
  EXPECT_EQ(masked({1, 3, 3, 2, 3}, k1, Tensor()), (std::vector<double>{-kInf, 3, 3, -kInf, 3}));
  // Equal logits: the nucleus keeps the higher indices first (vLLM's stable ascending sort
  // masks the lower ones); p = 0.5 of four equal tokens is two, 0.6 three.
  EXPECT_EQ(masked({0, 0, 0, 0}, Tensor(), p1), (std::vector<double>{-kInf, -kInf, 0, 0}));
  p = 0.6;
  EXPECT_EQ(masked({0, 0, 0, 0}, Tensor(), p1), (std::vector<double>{-kInf, 0, 0, 0}));
  // A tiny p keeps one token: the highest index among the largest.
  p = 1e-9;
  EXPECT_EQ(masked({5, 1, 5, 2}, Tensor(), p1), (std::vector<double>{-kInf, -kInf, 5, -kInf}));
  // k = 1 keeps every largest; then p over those.
  k = 1;
  p = 1.0;
  EXPECT_EQ(masked({5, 1, 5, 2}, k1, p1), (std::vector<double>{5, -kInf, 5, -kInf}));
  // k = V and p = 1 mask nothing, even far below the largest (softmax underflows in float32).
  k = 4;
  EXPECT_EQ(masked({-200, 0, 100, 1}, k1, p1), (std::vector<double>{-200, 0, 100, 1}));
  // -inf logits stay, count as tokens for k, and a row of only -inf is left as it is.
  k = 3;
  EXPECT_EQ(masked({-kInfF, 2, -kInfF, 1}, k1, Tensor()),
            (std::vector<double>{-kInf, 2, -kInf, 1}));
  p = 0.3;
  EXPECT_EQ(masked({-kInfF, -kInfF}, Tensor(), p1), (std::vector<double>{-kInf, -kInf}));
  // The walk's boundary: probabilities 0.5, 0.3, 0.2; p = 0.79 keeps two (the mass before the
  // third is 0.8), p = 0.81 all three.
  const std::vector<float> row{std::log(0.2f), std::log(0.5f), std::log(0.3f)};
  p = 0.79;
  EXPECT_EQ(masked(row, Tensor(), p1), (std::vector<double>{-kInf, row[1], row[2]}));
  p = 0.81;
  EXPECT_EQ(masked(row, Tensor(), p1), (std::vector<double>{row[0], row[1], row[2]}));
}

TEST(TopKTopPMask, ClassFormAndThreadCounts) {
  std::mt19937_64 rng(5);
  constexpr std::int64_t kRows = 9, kVocab = 3001;
  auto logits =
      testing::random_tensor({kRows, kVocab}, DataType::kBFloat16, rng, Layout::kStrided, -5, 5);
  const std::vector<double> before = testing::to_doubles(logits.view());
  std::vector<std::int32_t> k(kRows, 40);
  std::vector<float> p(kRows, 0.8f);
  const Tensor kt(k.data(), Dims{kRows}, DataType::kInt32);
  const Tensor pt(p.data(), Dims{kRows}, DataType::kFloat32);
  ThreadPool one(1), three(3);
  Context ctx1, ctx3;
  ctx1.thread_pool = &one;
  ctx3.thread_pool = &three;
  top_k_top_p_mask(logits.view(), kt, pt, ctx1);
  const std::vector<double> single = testing::to_doubles(logits.view());
  testing::from_doubles(logits.view(), before);
  const TopKTopPMask op(logits.view(), kt, pt);
  op(logits.view(), kt, pt, ctx3);
  EXPECT_EQ(testing::to_doubles(logits.view()), single);
  // The class checks k's values on every call: nothing written for a bad one.
  testing::from_doubles(logits.view(), before);
  k[4] = 0;
  expect_rejected([&] { op(logits.view(), kt, pt); }, logits, "k", ErrorKind::kInvalidArgument,
                  {"row 4"});
}

TEST(TopKTopPMask, BadInputsWriteNothing) {
  std::mt19937_64 rng(3);
  auto logits = testing::random_tensor({3, 10}, DataType::kFloat32, rng);
  std::vector<std::int64_t> k{2, 3, 4};
  std::vector<float> p{0.5f, 0.9f, 1.0f};
  const Tensor kt(k.data(), Dims{3}, DataType::kInt64);
  const Tensor pt(p.data(), Dims{3}, DataType::kFloat32);
  const auto call = [&] { top_k_top_p_mask(logits.view(), kt, pt); };
  // Logits: a NaN or +inf in any row (the rows before it are not masked either).
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), kInf}) {
    std::vector<double> values = testing::to_doubles(logits.view());
    const std::vector<double> good = values;
    values[2 * 10 + 7] = bad;
    testing::from_doubles(logits.view(), values);
    expect_rejected(call, logits, "logits", ErrorKind::kInvalidArgument, {"row 2"});
    testing::from_doubles(logits.view(), good);
  }
  // k and p values.
  for (std::int64_t bad_k : {0, -1, 11}) {
    k[1] = bad_k;
    expect_rejected(call, logits, "k", ErrorKind::kInvalidArgument, {"row 1"});
  }
  k[1] = 3;
  for (float bad_p : {0.0f, -0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    p[2] = bad_p;
    expect_rejected(call, logits, "p", ErrorKind::kInvalidArgument, {"row 2"});
  }
  p[2] = 1.0f;
  // Shapes and dtypes.
  const Tensor k2(k.data(), Dims{2}, DataType::kInt64);
  expect_rejected([&] { top_k_top_p_mask(logits.view(), k2, Tensor()); }, logits, "k");
  const Tensor k_matrix(k.data(), Dims{3, 1}, DataType::kInt64);
  expect_rejected([&] { top_k_top_p_mask(logits.view(), k_matrix, Tensor()); }, logits, "k");
  const Tensor k_float(p.data(), Dims{3}, DataType::kFloat32);
  expect_rejected([&] { top_k_top_p_mask(logits.view(), k_float, Tensor()); }, logits, "k",
                  ErrorKind::kInvalidType);
  const Tensor p_int(k.data(), Dims{3}, DataType::kInt64);
  expect_rejected([&] { top_k_top_p_mask(logits.view(), Tensor(), p_int); }, logits, "p",
                  ErrorKind::kInvalidType);
  std::vector<std::int32_t> ints(30, 1);
  const Tensor int_logits(ints.data(), Dims{3, 10}, DataType::kInt32);
  EXPECT_THROW(top_k_top_p_mask(int_logits, kt, Tensor()), Error);
  const Tensor flat(logits.data(), Dims{30}, DataType::kFloat32);
  expect_rejected([&] { top_k_top_p_mask(flat, Tensor(), Tensor()); }, logits, "logits");
  const Tensor empty_vocab(logits.data(), Dims{3, 0}, DataType::kFloat32);
  expect_rejected([&] { top_k_top_p_mask(empty_vocab, Tensor(), Tensor()); }, logits, "logits");
  // Rows that share memory (stride 0) would be masked once per row: refused as overlapping.
  const Tensor shared_rows(logits.data(), Dims{3, 10}, Dims{0, 1}, DataType::kFloat32);
  expect_rejected([&] { top_k_top_p_mask(shared_rows, kt, Tensor()); }, logits, "logits");
  // Nothing to do without k and p, or without rows.
  const std::vector<double> before = testing::to_doubles(logits.view());
  top_k_top_p_mask(logits.view(), Tensor(), Tensor());
  EXPECT_EQ(testing::to_doubles(logits.view()), before);
  const Tensor no_rows(logits.data(), Dims{0, 10}, DataType::kFloat32);
  top_k_top_p_mask(no_rows, Tensor(), Tensor());
}

}  // namespace
}  // namespace tileops::ops
