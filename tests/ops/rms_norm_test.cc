// rms_norm against a float64 reference for every active implementation: tails, strides, every
// dtype, poisoned outputs, the class form and bad inputs.
#include "tileops/ops/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;

using testing::Layout;

using Param = std::tuple<DataType, std::int64_t, Layout, int>;  // ..., implementation

class RmsNormTest : public ::testing::TestWithParam<Param> {};

TEST_P(RmsNormTest, MatchesFloat64Reference) {
  const auto [dtype, width, layout, index] = GetParam();
  std::mt19937_64 rng(42);
  const Dims shape{3, 5, width};
  auto input = testing::random_tensor(shape, dtype, rng, layout);
  auto weight = testing::random_tensor({width}, dtype, rng, layout);
  auto out = testing::poisoned(shape, dtype, layout);
  rms_norm(input, weight, 1e-6, out, testing::with_implementation(index));
  const auto expected = testing::reference::rms_norm(testing::to_doubles(input),
                                                     testing::to_doubles(weight), 1e-6, width);
  EXPECT_EQ(testing::compare(out.view(), expected, testing::tolerance_for(dtype)), "");
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, RmsNormTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(1, 7, 33, 4097),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::ValuesIn(testing::cpu_implementations("rms_norm"))));

TEST(RmsNorm, InPlaceAndMixedWeightDtype) {
  testing::for_each_implementation("rms_norm", [&](const Context& ctx) {
    const auto rms_norm = [&](auto&&... a) { ops::rms_norm(a..., ctx); };  // under test
    std::mt19937_64 rng(7);
    auto x = testing::random_tensor({9, 130}, DataType::kBFloat16, rng);
    auto w = testing::random_tensor({130}, DataType::kFloat32, rng);
    const auto expected =
        testing::reference::rms_norm(testing::to_doubles(x), testing::to_doubles(w), 1e-5, 130);
    rms_norm(x, w, 1e-5, x);
    EXPECT_EQ(testing::compare(x.view(), expected, testing::tolerance_for(DataType::kBFloat16)),
              "");
  });
}

TEST(RmsNorm, CachedInstanceIsCorrectOnNewData) {
  testing::for_each_implementation("rms_norm", [&](const Context& ctx) {
    std::mt19937_64 rng(3);
    auto input = testing::random_tensor({4, 100}, DataType::kFloat32, rng);
    auto weight = testing::random_tensor({100}, DataType::kFloat32, rng);
    auto out = testing::poisoned({4, 100}, DataType::kFloat32);
    const RmsNorm op(input, weight, 1e-6, out, ctx.implementation_index);
    for (int round = 0; round < 3; ++round) {
      auto x = testing::random_tensor({4, 100}, DataType::kFloat32, rng);
      auto w = testing::random_tensor({100}, DataType::kFloat32, rng);
      auto y = testing::poisoned({4, 100}, DataType::kFloat32);
      op(x, w, y);
      const auto expected =
          testing::reference::rms_norm(testing::to_doubles(x), testing::to_doubles(w), 1e-6, 100);
      EXPECT_EQ(testing::compare(y.view(), expected, testing::tolerance_for(DataType::kFloat32)),
                "");
    }
    auto other = testing::poisoned({5, 100}, DataType::kFloat32);
    EXPECT_THROW(op(other, weight, other), Error);
  });
}

TEST(RmsNorm, RejectsBadInputs) {
  testing::for_each_implementation("rms_norm", [&](const Context& ctx) {
    const auto rms_norm = [&](auto&&... a) { ops::rms_norm(a..., ctx); };  // under test
    std::mt19937_64 rng(1);
    auto input = testing::random_tensor({4, 64}, DataType::kFloat32, rng);
    auto weight = testing::random_tensor({64}, DataType::kFloat32, rng);
    auto short_weight = testing::random_tensor({63}, DataType::kFloat32, rng);
    auto int_input = testing::random_tensor({4, 64}, DataType::kInt32, rng);
    auto out = testing::poisoned({4, 64}, DataType::kFloat32);
    auto half_out = testing::poisoned({4, 64}, DataType::kFloat16);
    expect_rejected([&] { rms_norm(input, short_weight, 1e-6, out); }, out, "weight");
    expect_rejected([&] { rms_norm(int_input, weight, 1e-6, out); }, out, "input",
                    ErrorKind::kInvalidType);
    expect_rejected([&] { rms_norm(input, weight, 1e-6, half_out); }, half_out, "out",
                    ErrorKind::kInvalidType);
    expect_rejected([&] { rms_norm(input, input, 1e-6, out); }, out, "weight");  // rank 2
    expect_rejected([&] { rms_norm(input, weight, -1.0, out); }, out, "eps");
  });
}

// NaN and ±inf give what float64 gives: a NaN makes its row NaN; an infinite element makes the
// row's scale 0, so that element is NaN and the others ±0; a NaN weight makes its column NaN.
// Rows: finite, NaN, +inf, -inf and NaN, finite.
TEST(RmsNorm, NonFiniteValuesPropagate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  testing::for_each_implementation("rms_norm", [&](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (std::int64_t width : {7, 33, 4097}) {
        SCOPED_TRACE(::testing::Message() << name_of(dtype) << " width " << width);
        std::mt19937_64 rng(width);
        auto input = testing::random_tensor({5, width}, dtype, rng, Layout::kStrided);
        auto weight = testing::random_tensor({width}, dtype, rng);
        std::vector<double> x = testing::to_doubles(input), w = testing::to_doubles(weight);
        x[width + width / 2] = nan;
        x[3 * width - 1] = inf;
        x[3 * width] = -inf, x[4 * width - 2] = -nan;
        w[width / 3] = nan;
        testing::from_doubles(input, x), testing::from_doubles(weight, w);
        auto out = testing::poisoned({5, width}, dtype);
        rms_norm(input, weight, 1e-6, out, ctx);
        EXPECT_EQ(testing::compare(out.view(), testing::reference::rms_norm(x, w, 1e-6, width),
                                   testing::tolerance_for(dtype)),
                  "");
      }
    }
  });
}

}  // namespace
}  // namespace tileops::ops
