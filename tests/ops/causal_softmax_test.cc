// causal_softmax against a float64 reference, per active implementation: S < T and S == T, batched
// and not, tails, strides, every dtype, poisoned outputs, exact zeros under the mask, masked inputs
// never read, several thread counts, in place, the class form and bad inputs.
#include "tileops/ops/causal_softmax.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <tuple>
#include <utility>

#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/scoped_env.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;

using testing::Layout;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Relative tolerance, as for scaled_softmax: softmax outputs are in [0, 1] and often tiny.
testing::Tolerance softmax_tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
      return {1e-7, 1e-3};
    case DataType::kBFloat16:
      return {1e-9, 8e-3};
    default:
      return {1e-12, 2e-5};
  }
}

// Whether row i (of S) may see column j (of T).
bool visible(std::int64_t s, std::int64_t t, std::int64_t i, std::int64_t j) {
  return j <= t - s + i;
}

// Softmax over the visible prefix of each row in float64, 0 elsewhere; rows are
// [.., S, T] row-major.
std::vector<double> reference(const std::vector<double>& x, std::int64_t s, std::int64_t t) {
  std::vector<double> y(x.size(), 0.0);
  for (std::size_t row = 0; row < x.size() / t; ++row) {
    const std::int64_t i = static_cast<std::int64_t>(row) % s;
    const double* in = &x[row * t];
    double* out = &y[row * t];
    double m = -INFINITY;
    for (std::int64_t j = 0; j < t && visible(s, t, i, j); ++j) m = std::max(m, in[j]);
    double sum = 0.0;
    for (std::int64_t j = 0; j < t && visible(s, t, i, j); ++j) sum += std::exp(in[j] - m);
    for (std::int64_t j = 0; j < t && visible(s, t, i, j); ++j) out[j] = std::exp(in[j] - m) / sum;
  }
  return y;
}

// Every masked element of out is +0 exactly.
std::string masked_are_zero(const Tensor& out, std::int64_t s, std::int64_t t) {
  const auto got = testing::to_doubles(out);
  for (std::size_t k = 0; k < got.size(); ++k) {
    const std::int64_t i = static_cast<std::int64_t>(k) / t % s;
    const std::int64_t j = static_cast<std::int64_t>(k) % t;
    if (!visible(s, t, i, j) && (got[k] != 0.0 || std::signbit(got[k]))) {
      return "masked element " + std::to_string(k) + " is " + std::to_string(got[k]);
    }
  }
  return {};
}

struct Geometry {
  std::int64_t batch;  // 0: rank 2 [S, T]
  std::int64_t s;
  std::int64_t t;
  Dims shape() const { return batch == 0 ? Dims{s, t} : Dims{batch, s, t}; }
};

void PrintTo(const Geometry& g, std::ostream* os) { *os << g.shape().to_string(); }

using Param = std::tuple<DataType, Geometry, Layout, Layout, int>;  // ..., implementation

class CausalSoftmaxTest : public ::testing::TestWithParam<Param> {};

TEST_P(CausalSoftmaxTest, MatchesFloat64Reference) {
  const auto [dtype, geometry, in_layout, out_layout, index] = GetParam();
  std::mt19937_64 rng(42);
  const Dims shape = geometry.shape();
  auto input = testing::random_tensor(shape, dtype, rng, in_layout, -4.0, 4.0);
  auto out = testing::poisoned(shape, dtype, out_layout);
  causal_softmax(input, out, testing::with_implementation(index));
  const auto expected = reference(testing::to_doubles(input), geometry.s, geometry.t);
  EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "");
  EXPECT_EQ(masked_are_zero(out.view(), geometry.s, geometry.t), "");
}

// T in {1, 7, 33, 4097}; S == T and S < T; with and without a batch dim.
INSTANTIATE_TEST_SUITE_P(
    AllDtypes, CausalSoftmaxTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(Geometry{0, 1, 1}, Geometry{0, 7, 7}, Geometry{2, 3, 7},
                                         Geometry{0, 33, 33}, Geometry{3, 5, 33},
                                         Geometry{0, 1, 4097}, Geometry{2, 6, 4097}),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::ValuesIn(testing::cpu_implementations("causal_softmax"))));

// Outputs above the streaming threshold (0 here): the tl kernel then stashes float32 rows in its
// scratch row, not in out, and streams the stores (a row of a whole chunk and a masked one).
TEST(CausalSoftmax, StreamedStores) {
  const testing::ScopedEnv stream("TILEOPS_TL_STREAM_BYTES", "0");
  testing::for_each_implementation("causal_softmax", [&](const Context& ctx) {
    for (const DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
      for (const Layout layout : {Layout::kContiguous, Layout::kStrided}) {
        std::mt19937_64 rng(11);
        auto input = testing::random_tensor({2, 3, 1030}, dtype, rng, layout, -4.0, 4.0);
        auto out = testing::poisoned({2, 3, 1030}, dtype, layout);
        causal_softmax(input, out, ctx);
        const auto expected = reference(testing::to_doubles(input), 3, 1030);
        EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "")
            << name_of(dtype) << " " << testing::layout_name(layout);
        EXPECT_EQ(masked_are_zero(out.view(), 3, 1030), "");
      }
    }
  });
}

// 16-bit rows normalised during the next row's exp pass (pipelined) and in a third pass (the tl
// kernel takes one form per CPU; TILEOPS_TL_SOFTMAX_PIPELINE forces either): rows of 1 to 2100
// visible columns, several per block.
TEST(CausalSoftmax, SixteenBitRowsPipelinedAndInThreePasses) {
  for (const char* pipeline : {"1", "0"}) {
    const testing::ScopedEnv env("TILEOPS_TL_SOFTMAX_PIPELINE", pipeline);
    testing::for_each_implementation("causal_softmax", [&](const Context& ctx) {
      for (const DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
        std::mt19937_64 rng(13);
        auto input = testing::random_tensor({2, 5, 2100}, dtype, rng, Layout::kStrided, -4.0, 4.0);
        auto out = testing::poisoned({2, 5, 2100}, dtype, Layout::kStrided);
        causal_softmax(input, out, ctx);
        const auto expected = reference(testing::to_doubles(input), 5, 2100);
        EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "")
            << "TILEOPS_TL_SOFTMAX_PIPELINE=" << pipeline << " " << name_of(dtype);
        EXPECT_EQ(masked_are_zero(out.view(), 5, 2100), "");
      }
    });
  }
}

// The masked inputs are never read: NaNs there (of either sign) change nothing. t = 1030: the tl
// kernel's rows are a whole 1024-lane chunk and a masked one.
TEST(CausalSoftmax, IgnoresMaskedInputs) {
  testing::for_each_implementation("causal_softmax", [&](const Context& ctx) {
    const auto causal_softmax = [&](auto&&... a) { ops::causal_softmax(a..., ctx); };  // under test
    for (const DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (const auto& [s, t] : {std::pair<std::int64_t, std::int64_t>{9, 20}, {3, 1030}}) {
        const std::int64_t b = 2;
        std::mt19937_64 rng(4);
        auto input = testing::random_tensor({b, s, t}, dtype, rng);
        auto values = testing::to_doubles(input);
        const auto expected = reference(values, s, t);
        for (std::size_t k = 0; k < values.size(); ++k) {
          const std::int64_t i = static_cast<std::int64_t>(k) / t % s;
          if (!visible(s, t, i, static_cast<std::int64_t>(k) % t)) {
            values[k] = k % 2 == 0 ? kNaN : -kNaN;
          }
        }
        testing::from_doubles(input, values);
        auto out = testing::poisoned({b, s, t}, dtype);
        causal_softmax(input, out);
        EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "")
            << name_of(dtype) << ", t " << t;
        EXPECT_EQ(masked_are_zero(out.view(), s, t), "") << name_of(dtype) << ", t " << t;
      }
    }
  });
}

// Visible NaN (either sign) and ±inf as scaled_softmax: -inf gives 0; a NaN or +inf, or a
// visible prefix of only -inf, makes the row's visible part NaN; the masked part stays +0.
TEST(CausalSoftmax, NonFiniteVisibleValues) {
  testing::for_each_implementation("causal_softmax", [&](const Context& ctx) {
    for (const DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (const auto& [s, t] : {std::pair<std::int64_t, std::int64_t>{6, 20}, {6, 1030}}) {
        SCOPED_TRACE(::testing::Message() << name_of(dtype) << ", t " << t);
        std::mt19937_64 rng(5);
        auto input = testing::random_tensor({s, t}, dtype, rng, Layout::kStrided);
        auto values = testing::to_doubles(input);
        const std::int64_t d = t - s;  // row i sees columns 0..d + i
        for (std::int64_t j = 0; j <= d; j += 2) values[j] = -INFINITY;       // row 0: some -inf
        for (std::int64_t j = 0; j <= d + 1; ++j) values[t + j] = -INFINITY;  // row 1: all
        values[2 * t + d] = kNaN;                                             // row 2
        values[3 * t + 1] = INFINITY;                                         // row 3
        values[4 * t + d + 4] = -kNaN;                                        // row 4
        testing::from_doubles(input, values);
        auto out = testing::poisoned({s, t}, dtype);
        ops::causal_softmax(input, out, ctx);
        const auto expected = reference(values, s, t);
        EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(dtype)), "");
        EXPECT_EQ(masked_are_zero(out.view(), s, t), "");
        for (std::int64_t j = 0; j <= d; j += 2) EXPECT_EQ(expected[j], 0.0);
        EXPECT_TRUE(std::isnan(expected[t]));
        EXPECT_TRUE(std::isnan(expected[4 * t]));
      }
    }
  });
}

// The zig-zag row order over contiguous chunks covers every row once for any thread count.
TEST(CausalSoftmax, AnyThreadCount) {
  for (const int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    Context base;
    base.thread_pool = &pool;
    testing::for_each_implementation(
        "causal_softmax",
        [&](const Context& ctx) {
          for (const std::int64_t s : {1, 2, 7, 64}) {
            const DataType bf16 = DataType::kBFloat16;
            std::mt19937_64 rng(static_cast<std::uint64_t>(s));
            auto input = testing::random_tensor({3, s, 70}, bf16, rng);
            auto out = testing::poisoned({3, s, 70}, bf16);
            causal_softmax(input, out, ctx);
            const auto expected = reference(testing::to_doubles(input), s, 70);
            EXPECT_EQ(testing::compare(out.view(), expected, softmax_tolerance(bf16)), "")
                << threads << " threads, S " << s;
            EXPECT_EQ(masked_are_zero(out.view(), s, 70), "");
          }
        },
        base);
  }
}

TEST(CausalSoftmax, InPlace) {
  testing::for_each_implementation("causal_softmax", [&](const Context& ctx) {
    const auto causal_softmax = [&](auto&&... a) { ops::causal_softmax(a..., ctx); };  // under test
    for (const Layout layout : {Layout::kContiguous, Layout::kStrided}) {
      for (const DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
        std::mt19937_64 rng(7);
        auto x = testing::random_tensor({2, 12, 40}, dtype, rng, layout);
        const auto expected = reference(testing::to_doubles(x), 12, 40);
        causal_softmax(x, x);
        EXPECT_EQ(testing::compare(x.view(), expected, softmax_tolerance(dtype)), "")
            << name_of(dtype) << " " << testing::layout_name(layout);
        EXPECT_EQ(masked_are_zero(x.view(), 12, 40), "");
      }
    }
  });
}

TEST(CausalSoftmax, CachedInstanceIsCorrectOnNewData) {
  testing::for_each_implementation("causal_softmax", [&](const Context& ctx) {
    std::mt19937_64 rng(3);
    auto input = testing::random_tensor({16, 100}, DataType::kFloat32, rng);
    auto out = testing::poisoned({16, 100}, DataType::kFloat32);
    const CausalSoftmax op(input, out, ctx.implementation_index);
    for (int round = 0; round < 3; ++round) {
      auto x = testing::random_tensor({16, 100}, DataType::kFloat32, rng);
      auto y = testing::poisoned({16, 100}, DataType::kFloat32);
      op(x, y);
      const auto expected = reference(testing::to_doubles(x), 16, 100);
      EXPECT_EQ(testing::compare(y.view(), expected, softmax_tolerance(DataType::kFloat32)), "");
      EXPECT_EQ(masked_are_zero(y.view(), 16, 100), "");
    }
    auto other = testing::poisoned({17, 100}, DataType::kFloat32);
    EXPECT_THROW(op(other, other), Error);
  });
}

TEST(CausalSoftmax, RejectsBadInputs) {
  testing::for_each_implementation("causal_softmax", [&](const Context& ctx) {
    const auto causal_softmax = [&](auto&&... a) { ops::causal_softmax(a..., ctx); };  // under test
    std::mt19937_64 rng(1);
    const auto invalid = ErrorKind::kInvalidArgument;
    auto input = testing::random_tensor({4, 64}, DataType::kFloat32, rng);
    auto out = testing::poisoned({4, 64}, DataType::kFloat32);
    auto int_input = testing::random_tensor({4, 64}, DataType::kInt32, rng);
    expect_rejected([&] { causal_softmax(int_input, out); }, out, "input", ErrorKind::kInvalidType);
    auto half_out = testing::poisoned({4, 64}, DataType::kFloat16);
    expect_rejected([&] { causal_softmax(input, half_out); }, half_out, "out",
                    ErrorKind::kInvalidType);
    auto short_out = testing::poisoned({4, 63}, DataType::kFloat32);
    expect_rejected([&] { causal_softmax(input, short_out); }, short_out, "out", invalid);
    auto wide = testing::random_tensor({64, 4}, DataType::kFloat32, rng);  // T < S
    auto wide_out = testing::poisoned({64, 4}, DataType::kFloat32);
    expect_rejected([&] { causal_softmax(wide, wide_out); }, wide_out, "input", invalid);
    auto row = testing::random_tensor({64}, DataType::kFloat32, rng);  // rank 1
    auto row_out = testing::poisoned({64}, DataType::kFloat32);
    expect_rejected([&] { causal_softmax(row, row_out); }, row_out, "input", invalid);
    auto rank4 = testing::random_tensor({2, 2, 4, 64}, DataType::kFloat32, rng);
    auto rank4_out = testing::poisoned({2, 2, 4, 64}, DataType::kFloat32);
    expect_rejected([&] { causal_softmax(rank4, rank4_out); }, rank4_out, "input", invalid);
  });
}

}  // namespace
}  // namespace tileops::ops
