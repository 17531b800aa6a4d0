// add_rms_norm against a float64 reference for every active implementation: tails, strides, every
// dtype, poisoned outputs, the in-place forms, the class form and bad inputs.
#include "tileops/ops/add_rms_norm.h"

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

// The contract's residual_out: the float32 sum of the two dtype values, rounded to the dtype.
std::vector<double> rounded_sum(const std::vector<double>& x, const std::vector<double>& r,
                                DataType dtype) {
  std::vector<double> sum(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    sum[i] = static_cast<double>(static_cast<float>(x[i]) + static_cast<float>(r[i]));
  }
  TensorStorage rounded({static_cast<std::int64_t>(sum.size())}, dtype);
  testing::from_doubles(rounded, sum);
  return testing::to_doubles(rounded);
}

// The expected (out, residual_out) of one call.
struct Expected {
  std::vector<double> out;
  std::vector<double> residual_out;
};

Expected reference(const Tensor& input, const Tensor& residual, const Tensor& weight, double eps) {
  Expected e;
  e.residual_out =
      rounded_sum(testing::to_doubles(input), testing::to_doubles(residual), input.dtype());
  e.out = testing::reference::rms_norm(e.residual_out, testing::to_doubles(weight), eps,
                                       input.size(-1));
  return e;
}

// residual_out is exact by contract; out has the rms_norm tolerance of the dtype.
void expect_matches(const Tensor& out, const Tensor& residual_out, const Expected& e) {
  EXPECT_EQ(testing::compare(residual_out, e.residual_out, {0.0, 0.0}), "") << "residual_out";
  EXPECT_EQ(testing::compare(out, e.out, testing::tolerance_for(out.dtype())), "") << "out";
}

using Param = std::tuple<DataType, std::int64_t, Layout, Layout, int>;  // ..., implementation

class AddRmsNormTest : public ::testing::TestWithParam<Param> {};

TEST_P(AddRmsNormTest, MatchesFloat64Reference) {
  const auto [dtype, width, in_layout, out_layout, index] = GetParam();
  std::mt19937_64 rng(42);
  const Dims shape{3, 5, width};
  auto input = testing::random_tensor(shape, dtype, rng, in_layout);
  auto residual = testing::random_tensor(shape, dtype, rng, in_layout);
  auto weight = testing::random_tensor({width}, dtype, rng, in_layout);
  auto out = testing::poisoned(shape, dtype, out_layout);
  auto residual_out = testing::poisoned(shape, dtype, out_layout);
  add_rms_norm(input, residual, weight, 1e-6, out, residual_out,
               testing::with_implementation(index));
  expect_matches(out, residual_out, reference(input, residual, weight, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, AddRmsNormTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(1, 7, 33, 4097),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::ValuesIn(testing::cpu_implementations("add_rms_norm"))));

// add_rms_norm_inplace, and the explicit form with out = input and residual_out = residual.
TEST(AddRmsNorm, InPlaceForms) {
  testing::for_each_implementation("add_rms_norm", [&](const Context& ctx) {
    const auto add_rms_norm = [&](auto&&... a) { ops::add_rms_norm(a..., ctx); };  // under test
    const auto add_rms_norm_inplace = [&](auto&&... a) {
      ops::add_rms_norm_inplace(a..., ctx);
    };  // under test
    for (const Layout layout : {Layout::kContiguous, Layout::kStrided}) {
      for (const DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
        SCOPED_TRACE(std::string(name_of(dtype)) + " " + testing::layout_name(layout));
        std::mt19937_64 rng(7);
        auto x = testing::random_tensor({9, 130}, dtype, rng, layout);
        auto r = testing::random_tensor({9, 130}, dtype, rng, layout);
        auto w = testing::random_tensor({130}, DataType::kFloat32, rng);
        const Expected e = reference(x, r, w, 1e-5);
        add_rms_norm_inplace(x, r, w, 1e-5);
        expect_matches(x, r, e);

        auto x2 = testing::random_tensor({4, 33}, dtype, rng, layout);
        auto r2 = testing::random_tensor({4, 33}, dtype, rng, layout);
        auto w2 = testing::random_tensor({33}, DataType::kBFloat16, rng);
        const Expected e2 = reference(x2, r2, w2, 0.0);
        add_rms_norm(x2, r2, w2, 0.0, x2, r2);
        expect_matches(x2, r2, e2);
      }
    }
  });
}

TEST(AddRmsNorm, CachedInstanceIsCorrectOnNewData) {
  testing::for_each_implementation("add_rms_norm", [&](const Context& ctx) {
    std::mt19937_64 rng(3);
    const Dims shape{4, 100};
    auto input = testing::random_tensor(shape, DataType::kBFloat16, rng);
    auto residual = testing::random_tensor(shape, DataType::kBFloat16, rng);
    auto weight = testing::random_tensor({100}, DataType::kFloat32, rng);
    auto out = testing::poisoned(shape, DataType::kBFloat16);
    auto residual_out = testing::poisoned(shape, DataType::kBFloat16);
    const AddRmsNorm op(input, residual, weight, 1e-6, out, residual_out, ctx.implementation_index);
    for (int round = 0; round < 3; ++round) {
      auto x = testing::random_tensor(shape, DataType::kBFloat16, rng);
      auto r = testing::random_tensor(shape, DataType::kBFloat16, rng);
      auto w = testing::random_tensor({100}, DataType::kFloat32, rng);
      auto y = testing::poisoned(shape, DataType::kBFloat16);
      auto s = testing::poisoned(shape, DataType::kBFloat16);
      op(x, r, w, y, s);
      expect_matches(y, s, reference(x, r, w, 1e-6));
    }
    auto other = testing::poisoned({5, 100}, DataType::kBFloat16);
    EXPECT_THROW(op(other, other, weight, other, other), Error);
  });
}

TEST(AddRmsNorm, RejectsBadInputs) {
  testing::for_each_implementation("add_rms_norm", [&](const Context& ctx) {
    const auto add_rms_norm = [&](auto&&... a) { ops::add_rms_norm(a..., ctx); };  // under test
    const auto add_rms_norm_inplace = [&](auto&&... a) {
      ops::add_rms_norm_inplace(a..., ctx);
    };  // under test
    std::mt19937_64 rng(1);
    const auto invalid = ErrorKind::kInvalidArgument;
    const auto type = ErrorKind::kInvalidType;
    const Dims shape{4, 64};
    auto x = testing::random_tensor(shape, DataType::kFloat32, rng);
    auto r = testing::random_tensor(shape, DataType::kFloat32, rng);
    auto w = testing::random_tensor({64}, DataType::kFloat32, rng);
    auto out = testing::poisoned(shape, DataType::kFloat32);
    auto res_out = testing::poisoned(shape, DataType::kFloat32);
    const std::vector<const TensorStorage*> both = {&out, &res_out};

    auto int_x = testing::random_tensor(shape, DataType::kInt32, rng);
    expect_rejected([&] { add_rms_norm(int_x, r, w, 1e-6, out, res_out); }, both, "input", type);
    auto half_r = testing::random_tensor(shape, DataType::kFloat16, rng);
    expect_rejected([&] { add_rms_norm(x, half_r, w, 1e-6, out, res_out); }, both, "residual",
                    type);
    auto half_out = testing::poisoned(shape, DataType::kFloat16);
    expect_rejected([&] { add_rms_norm(x, r, w, 1e-6, out, half_out); }, {&out, &half_out},
                    "residual_out", type);
    auto short_r = testing::random_tensor({4, 63}, DataType::kFloat32, rng);
    expect_rejected([&] { add_rms_norm(x, short_r, w, 1e-6, out, res_out); }, both, "residual",
                    invalid);
    auto short_w = testing::random_tensor({63}, DataType::kFloat32, rng);
    expect_rejected([&] { add_rms_norm(x, r, short_w, 1e-6, out, res_out); }, both, "weight",
                    invalid);
    expect_rejected([&] { add_rms_norm(x, r, x, 1e-6, out, res_out); }, both, "weight", invalid);
    auto tall_out = testing::poisoned({5, 64}, DataType::kFloat32);
    expect_rejected([&] { add_rms_norm(x, r, w, 1e-6, tall_out, res_out); }, {&tall_out, &res_out},
                    "out", invalid);
    expect_rejected([&] { add_rms_norm(x, r, w, -1.0, out, res_out); }, both, "eps", invalid);
    expect_rejected([&] { add_rms_norm(x, r, w, NAN, out, res_out); }, both, "eps", invalid);
    // The in-place form writes into input and residual: those stay untouched on error.
    expect_rejected([&] { add_rms_norm_inplace(x, r, short_w, 1e-6); }, {&x, &r}, "weight",
                    invalid);
    expect_rejected([&] { add_rms_norm_inplace(x, short_r, w, 1e-6); }, {&x, &short_r}, "residual",
                    invalid);
    expect_rejected([&] { add_rms_norm_inplace(x, r, w, INFINITY); }, {&x, &r}, "eps", invalid);
  });
}

// NaN and ±inf in input or residual give what float64 gives on their float32 sum (inf - inf:
// NaN), in residual_out exactly and in out as rms_norm's (a NaN row, 0·inf NaN, ±0 elsewhere).
TEST(AddRmsNorm, NonFiniteValuesPropagate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  testing::for_each_implementation("add_rms_norm", [&](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (std::int64_t width : {7, 33, 4097}) {
        SCOPED_TRACE(::testing::Message() << name_of(dtype) << " width " << width);
        std::mt19937_64 rng(width);
        auto input = testing::random_tensor({6, width}, dtype, rng, Layout::kStrided);
        auto residual = testing::random_tensor({6, width}, dtype, rng);
        auto weight = testing::random_tensor({width}, dtype, rng);
        std::vector<double> x = testing::to_doubles(input), r = testing::to_doubles(residual);
        std::vector<double> w = testing::to_doubles(weight);
        x[width + width / 2] = nan;               // row 1: NaN
        r[3 * width - 1] = inf;                   // row 2: +inf
        x[3 * width] = inf, r[3 * width] = -inf;  // row 3: inf - inf
        r[4 * width + 1 % width] = -nan;          // row 4: NaN from the residual
        w[width / 3] = inf;                       // a column of ±inf (NaN on ±0 and in row 2)
        testing::from_doubles(input, x), testing::from_doubles(residual, r);
        testing::from_doubles(weight, w);
        auto out = testing::poisoned({6, width}, dtype);
        auto residual_out = testing::poisoned({6, width}, dtype);
        add_rms_norm(input, residual, weight, 1e-6, out, residual_out, ctx);
        expect_matches(out, residual_out, reference(input, residual, weight, 1e-6));
      }
    }
  });
}

}  // namespace
}  // namespace tileops::ops
