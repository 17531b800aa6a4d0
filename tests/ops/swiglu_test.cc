// swiglu against a float64 reference, per active implementation: tails, strides, every dtype,
// extreme gates, in-place calls, thread splits, the class form and bad inputs.
#include "tileops/ops/swiglu.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <tuple>

#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::Layout;

using testing::reference::silu;

std::vector<double> reference(const Tensor& input, const Tensor& gate) {
  const std::vector<double> x = testing::to_doubles(input);
  const std::vector<double> g = testing::to_doubles(gate);
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * silu(g[i]);
  return y;
}

using Param = std::tuple<DataType, std::int64_t, Layout, int>;  // ..., implementation

class SwigluTest : public ::testing::TestWithParam<Param> {};

TEST_P(SwigluTest, MatchesFloat64Reference) {
  const auto [dtype, width, layout, index] = GetParam();
  std::mt19937_64 rng(42);
  const Dims shape{3, 5, width};
  // Gates over [-8, 8): both tails of the sigmoid and its middle.
  auto input = testing::random_tensor(shape, dtype, rng, layout);
  auto gate = testing::random_tensor(shape, dtype, rng, layout, -8.0, 8.0);
  auto out = testing::poisoned(shape, dtype, layout);
  swiglu(input, gate, out, testing::with_implementation(index));
  EXPECT_EQ(testing::compare(out.view(), reference(input, gate), testing::tolerance_for(dtype)),
            "");
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, SwigluTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(1, 7, 33, 4097),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::ValuesIn(testing::cpu_implementations("swiglu"))));

TEST(Swiglu, MixedLayoutsAndRanks) {
  testing::for_each_implementation("swiglu", [&](const Context& ctx) {
    const auto swiglu = [&](auto&&... a) { ops::swiglu(a..., ctx); };  // under test
    std::mt19937_64 rng(5);
    const Dims shapes[] = {{}, {1}, {4097}, {2, 3, 4, 5}, {0, 3}};
    for (const Dims& shape : shapes) {
      for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
        SCOPED_TRACE(shape.to_string() + " " + std::string(name_of(dtype)));
        auto input = testing::random_tensor(shape, dtype, rng, Layout::kStrided);
        auto gate = testing::random_tensor(shape, dtype, rng, Layout::kContiguous, -8.0, 8.0);
        auto out = testing::poisoned(shape, dtype, Layout::kStrided);
        swiglu(input, gate, out);
        EXPECT_EQ(
            testing::compare(out.view(), reference(input, gate), testing::tolerance_for(dtype)),
            "");
      }
    }
  });
}

// exp(-g) overflows float32 for g < -88.7: silu must still be ~0 there (not NaN), g for large
// positive g, and exact at the largest finite values of each dtype.
TEST(Swiglu, ExtremeGatesStayFinite) {
  testing::for_each_implementation("swiglu", [&](const Context& ctx) {
    const auto swiglu = [&](auto&&... a) { ops::swiglu(a..., ctx); };  // under test
    const double f16_max = 65504.0;
    const double bf16_max = 3.3895313892515355e38;
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      SCOPED_TRACE(name_of(dtype));
      const double top = dtype == DataType::kFloat32   ? FLT_MAX
                         : dtype == DataType::kFloat16 ? f16_max
                                                       : bf16_max;
      std::vector<double> gates = {0.0,  -0.0,  1e-3, -1e-3, 15.0,  -15.0,  20.0,    -20.0,
                                   88.0, -88.0, 89.0, -89.0, 100.0, -100.0, 104.5,   -104.5,
                                   1e3,  -1e3,  1e4,  -1e4,  top,   -top,   top / 2, -top / 2};
      const std::int64_t n = static_cast<std::int64_t>(gates.size());
      auto gate = testing::poisoned({n}, dtype);
      testing::from_doubles(gate, gates);
      std::mt19937_64 rng(9);
      auto input = testing::random_tensor({n}, dtype, rng, Layout::kContiguous, 0.5, 2.0);
      auto out = testing::poisoned({n}, dtype);
      swiglu(input, gate, out);
      const std::vector<double> got = testing::to_doubles(out);
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_FALSE(std::isnan(got[i])) << i;
      // x·g may exceed the dtype's range for g near its max: the expectation rounds the same way.
      std::vector<double> expected = reference(input, gate);
      auto rounded = testing::poisoned({n}, dtype);
      testing::from_doubles(rounded, expected);
      expected = testing::to_doubles(rounded);
      EXPECT_EQ(testing::compare(out.view(), expected, testing::tolerance_for(dtype)), "");
    }
  });
}

TEST(Swiglu, NanGatePropagates) {
  testing::for_each_implementation("swiglu", [&](const Context& ctx) {
    const auto swiglu = [&](auto&&... a) { ops::swiglu(a..., ctx); };  // under test
    TensorStorage input({3}, DataType::kFloat32);
    TensorStorage gate({3}, DataType::kFloat32);
    TensorStorage out({3}, DataType::kFloat32);
    testing::from_doubles(input, {1.0, 1.0, 1.0});
    testing::from_doubles(gate, {NAN, 1.0, -NAN});
    swiglu(input, gate, out);
    EXPECT_EQ(testing::compare(out.view(), {NAN, silu(1.0), NAN},
                               testing::tolerance_for(DataType::kFloat32)),
              "");
  });
}

TEST(Swiglu, InPlace) {
  testing::for_each_implementation("swiglu", [&](const Context& ctx) {
    const auto swiglu = [&](auto&&... a) { ops::swiglu(a..., ctx); };  // under test
    for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
      for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
        SCOPED_TRACE(std::string(name_of(dtype)) + " " + testing::layout_name(layout));
        std::mt19937_64 rng(7);
        auto x = testing::random_tensor({9, 130}, dtype, rng, layout);
        auto g = testing::random_tensor({9, 130}, dtype, rng, layout, -8.0, 8.0);
        const auto expected_x = reference(x, g);
        swiglu(x, g, x);  // out is input
        EXPECT_EQ(testing::compare(x.view(), expected_x, testing::tolerance_for(dtype)), "");
        const auto expected_g = reference(x, g);
        swiglu(x, g, g);  // out is gate
        EXPECT_EQ(testing::compare(g.view(), expected_g, testing::tolerance_for(dtype)), "");
      }
    }
  });
}

TEST(Swiglu, SplitsOneLongRowAcrossThreads) {
  ThreadPool pool(4);
  Context base;
  base.thread_pool = &pool;
  testing::for_each_implementation(
      "swiglu",
      [](const Context& ctx) {
        std::mt19937_64 rng(2);
        for (const Dims& shape : {Dims{100003}, Dims{1, 100003}, Dims{3, 40001}}) {
          SCOPED_TRACE(shape.to_string());
          const DataType bf16 = DataType::kBFloat16;
          auto x = testing::random_tensor(shape, bf16, rng);
          auto g = testing::random_tensor(shape, bf16, rng, Layout::kContiguous, -8, 8);
          auto out = testing::poisoned(shape, bf16);
          swiglu(x, g, out, ctx);
          EXPECT_EQ(testing::compare(out.view(), reference(x, g), testing::tolerance_for(bf16)),
                    "");
        }
      },
      base);
}

TEST(Swiglu, CachedInstanceIsCorrectOnNewData) {
  testing::for_each_implementation("swiglu", [&](const Context& ctx) {
    std::mt19937_64 rng(3);
    const Dims shape{4, 100};
    auto input = testing::random_tensor(shape, DataType::kFloat16, rng);
    auto gate = testing::random_tensor(shape, DataType::kFloat16, rng);
    auto out = testing::poisoned(shape, DataType::kFloat16);
    const Swiglu op(input, gate, out, ctx.implementation_index);
    for (int round = 0; round < 3; ++round) {
      auto x = testing::random_tensor(shape, DataType::kFloat16, rng);
      auto g = testing::random_tensor(shape, DataType::kFloat16, rng, Layout::kContiguous, -8, 8);
      auto y = testing::poisoned(shape, DataType::kFloat16);
      op(x, g, y);
      EXPECT_EQ(
          testing::compare(y.view(), reference(x, g), testing::tolerance_for(DataType::kFloat16)),
          "");
    }
    auto other = testing::poisoned({5, 100}, DataType::kFloat16);
    testing::expect_rejected([&] { op(other, other, other); }, other, "input");
  });
}

TEST(Swiglu, RejectsBadInputs) {
  testing::for_each_implementation("swiglu", [&](const Context& ctx) {
    const auto swiglu = [&](auto&&... a) { ops::swiglu(a..., ctx); };  // under test
    std::mt19937_64 rng(1);
    const DataType f32 = DataType::kFloat32;
    auto input = testing::random_tensor({4, 64}, f32, rng);
    auto gate = testing::random_tensor({4, 64}, f32, rng);
    auto row_gate = testing::random_tensor({64}, f32, rng);
    auto short_gate = testing::random_tensor({4, 63}, f32, rng);
    auto half_gate = testing::random_tensor({4, 64}, DataType::kFloat16, rng);
    auto int_input = testing::random_tensor({4, 64}, DataType::kInt32, rng);
    auto out = testing::poisoned({4, 64}, f32);
    auto half_out = testing::poisoned({4, 64}, DataType::kFloat16);
    auto long_out = testing::poisoned({4, 65}, f32);
    const auto kType = ErrorKind::kInvalidType;
    const auto kArg = ErrorKind::kInvalidArgument;
    using testing::expect_rejected;
    expect_rejected([&] { swiglu(int_input, int_input, out); }, out, "input", kType);
    expect_rejected([&] { swiglu(input, half_gate, out); }, out, "gate", kType);
    expect_rejected([&] { swiglu(input, gate, half_out); }, half_out, "out", kType);
    expect_rejected([&] { swiglu(input, short_gate, out); }, out, "gate", kArg);
    expect_rejected([&] { swiglu(input, row_gate, out); }, out, "gate", kArg);  // no broadcasting
    expect_rejected([&] { swiglu(input, gate, long_out); }, long_out, "out", kArg);
    const Tensor broadcast_out = out.view().with_shape({4, 64}, {0, 1});
    expect_rejected([&] { swiglu(input, gate, broadcast_out); }, out, "out", kArg);
  });
}

// NaN (either sign) and ±inf in input and gate, every float dtype, vector bodies and tails:
// as float64, with silu(+inf) = +inf and silu(-inf) = 0 (its limit), so inf · silu(-inf) is NaN.
TEST(Swiglu, NonFiniteValuesPropagate) {
  testing::for_each_implementation("swiglu", [&](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (std::int64_t width : {7, 37, 4097}) {
        SCOPED_TRACE(::testing::Message() << name_of(dtype) << " width " << width);
        std::mt19937_64 rng(width);
        auto input = testing::random_nonfinite_tensor({3, width}, dtype, rng, Layout::kStrided, 4);
        auto gate =
            testing::random_nonfinite_tensor({3, width}, dtype, rng, Layout::kContiguous, 4);
        auto out = testing::poisoned({3, width}, dtype);
        swiglu(input, gate, out, ctx);
        EXPECT_EQ(
            testing::compare(out.view(), reference(input, gate), testing::tolerance_for(dtype)),
            "");
      }
    }
  });
}

}  // namespace
}  // namespace tileops::ops
