// silu_and_mul against a float64 reference, per active implementation: every dtype, tails, strides,
// every split dim (negative too), extreme values, thread splits, the class form and bad inputs.
#include "tileops/ops/silu_and_mul.h"

#include <gtest/gtest.h>

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

// out[..., j, ...] = silu(x[..., j, ...]) · x[..., j + d, ...] along `dim` (already >= 0).
std::vector<double> reference(const Tensor& input, int dim) {
  const std::vector<double> x = testing::to_doubles(input);
  const Dims& shape = input.shape();
  const std::int64_t d = shape[dim] / 2;
  std::int64_t inner = 1;  // elements per step of dim in the row-major input
  for (int k = dim + 1; k < shape.size(); ++k) inner *= shape[k];
  std::int64_t outer = 1;
  for (int k = 0; k < dim; ++k) outer *= shape[k];
  std::vector<double> y;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t j = 0; j < d; ++j) {
      for (std::int64_t i = 0; i < inner; ++i) {
        const double a = x[static_cast<std::size_t>((o * 2 * d + j) * inner + i)];
        const double b = x[static_cast<std::size_t>((o * 2 * d + j + d) * inner + i)];
        y.push_back(testing::reference::silu(a) * b);
      }
    }
  }
  return y;
}

void check(const Dims& shape, int dim, DataType dtype, Layout in_layout, Layout out_layout,
           const Context& ctx = {}) {
  SCOPED_TRACE(shape.to_string() + " dim " + std::to_string(dim) + " " +
               std::string(name_of(dtype)) + " " + testing::layout_name(in_layout) + " -> " +
               testing::layout_name(out_layout));
  std::mt19937_64 rng(shape.product() + static_cast<std::uint64_t>(dim + 10));
  auto input = testing::random_tensor(shape, dtype, rng, in_layout, -8.0, 8.0);
  const int d = normalize_dim(dim, shape.size());
  Dims half = shape;
  half[d] /= 2;
  auto out = testing::poisoned(half, dtype, out_layout);
  silu_and_mul(input, dim, out, ctx);
  EXPECT_EQ(testing::compare(out.view(), reference(input, d), testing::tolerance_for(dtype)), "");
}

using Param = std::tuple<DataType, std::int64_t, Layout, int>;  // ..., implementation

class SiluAndMulTest : public ::testing::TestWithParam<Param> {};

TEST_P(SiluAndMulTest, LastDimMatchesFloat64Reference) {
  const auto [dtype, d, layout, index] = GetParam();
  check({3, 5, 2 * d}, -1, dtype, layout, layout, testing::with_implementation(index));
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, SiluAndMulTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16),
                       ::testing::Values(1, 7, 33, 4097),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::ValuesIn(testing::cpu_implementations("silu_and_mul"))));

TEST(SiluAndMul, EverySplitDim) {
  testing::for_each_implementation("silu_and_mul", [&](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
        check({4, 6, 33}, 0, dtype, layout, layout, ctx);
        check({4, 6, 33}, 1, dtype, layout, layout, ctx);
        check({4, 6, 33}, -2, dtype, layout, layout, ctx);
        check({4, 6, 34}, 2, dtype, layout, layout, ctx);
        check({4, 6, 34}, -1, dtype, layout, layout, ctx);
        check({66}, 0, dtype, layout, layout, ctx);
        check({8194}, -1, dtype, layout, layout, ctx);
        check({2, 1, 2}, 0, dtype, layout, layout, ctx);
        check({0, 4}, -1, dtype, layout, layout, ctx);  // empty
      }
      check({5, 130}, -1, dtype, Layout::kStrided, Layout::kContiguous, ctx);
      check({5, 130}, 1, dtype, Layout::kContiguous, Layout::kStrided, ctx);
    }
  });
}

// A transposed input: the split dim is the contiguous one, the last dim is not.
TEST(SiluAndMul, TransposedInput) {
  testing::for_each_implementation("silu_and_mul", [&](const Context& ctx) {
    const auto silu_and_mul = [&](auto&&... a) { ops::silu_and_mul(a..., ctx); };  // under test
    std::mt19937_64 rng(4);
    auto storage =
        testing::random_tensor({10, 37}, DataType::kFloat32, rng, Layout::kContiguous, -8.0, 8.0);
    const Tensor input = storage.view().transpose(0, 1);  // [37, 10], strides [1, 37]
    auto out = testing::poisoned({37, 5}, DataType::kFloat32);
    silu_and_mul(input, -1, out);
    EXPECT_EQ(testing::compare(out.view(), reference(input, 1),
                               testing::tolerance_for(DataType::kFloat32)),
              "");
  });
}

// exp overflows float32 for x < -88.7: silu must stay ~0 (no NaN) and x for large x.
TEST(SiluAndMul, ExtremeValuesStayFinite) {
  testing::for_each_implementation("silu_and_mul", [&](const Context& ctx) {
    const auto silu_and_mul = [&](auto&&... a) { ops::silu_and_mul(a..., ctx); };  // under test
    TensorStorage input({2, 8}, DataType::kFloat32);
    testing::from_doubles(input, {-1e30, -1e4, -104.5, -89, 89, 1e4, 3e38, -3e38,  //
                                  1.5, 2, -3, 0.5, 1, -1, 0.25, 2});
    auto out = testing::poisoned({1, 8}, DataType::kFloat32);
    silu_and_mul(input, 0, out);
    EXPECT_EQ(testing::compare(out.view(), reference(input, 0),
                               testing::tolerance_for(DataType::kFloat32)),
              "");
    for (double v : testing::to_doubles(out)) EXPECT_FALSE(std::isnan(v));
  });
}

TEST(SiluAndMul, SplitsOneLongRowAcrossThreads) {
  ThreadPool pool(4);
  Context base;
  base.thread_pool = &pool;
  testing::for_each_implementation(
      "silu_and_mul",
      [](const Context& ctx) {
        check({200006}, 0, DataType::kBFloat16, Layout::kContiguous, Layout::kContiguous, ctx);
        check({1, 200006}, -1, DataType::kFloat32, Layout::kContiguous, Layout::kContiguous, ctx);
        check({2, 60000}, 0, DataType::kFloat32, Layout::kStrided, Layout::kContiguous, ctx);
      },
      base);
}

TEST(SiluAndMul, CachedInstanceIsCorrectOnNewData) {
  testing::for_each_implementation("silu_and_mul", [&](const Context& ctx) {
    std::mt19937_64 rng(3);
    const DataType dtype = DataType::kBFloat16;
    auto input = testing::random_tensor({4, 200}, dtype, rng, Layout::kStrided);
    auto out = testing::poisoned({4, 100}, dtype);
    const SiluAndMul op(input, -1, out, ctx.implementation_index);
    for (int round = 0; round < 3; ++round) {
      auto x = testing::random_tensor({4, 200}, dtype, rng, Layout::kStrided, -8.0, 8.0);
      auto y = testing::poisoned({4, 100}, dtype);
      op(x, y);
      EXPECT_EQ(testing::compare(y.view(), reference(x, 1), testing::tolerance_for(dtype)), "");
    }
    auto contiguous = testing::random_tensor({4, 200}, dtype, rng);
    testing::expect_rejected([&] { op(contiguous, out); }, out, "input");
  });
}

TEST(SiluAndMul, RejectsBadInputs) {
  testing::for_each_implementation("silu_and_mul", [&](const Context& ctx) {
    const auto silu_and_mul = [&](auto&&... a) { ops::silu_and_mul(a..., ctx); };  // under test
    std::mt19937_64 rng(1);
    const DataType f32 = DataType::kFloat32;
    auto input = testing::random_tensor({4, 64}, f32, rng);
    auto odd = testing::random_tensor({4, 63}, f32, rng);
    auto int_input = testing::random_tensor({4, 64}, DataType::kInt32, rng);
    auto scalar = testing::random_tensor({}, f32, rng);
    auto out = testing::poisoned({4, 32}, f32);
    auto half_out = testing::poisoned({4, 32}, DataType::kFloat16);
    auto full_out = testing::poisoned({4, 64}, f32);
    auto odd_out = testing::poisoned({4, 31}, f32);
    const auto kType = ErrorKind::kInvalidType;
    const auto kArg = ErrorKind::kInvalidArgument;
    using testing::expect_rejected;
    expect_rejected([&] { silu_and_mul(int_input, -1, out); }, out, "input", kType);
    expect_rejected([&] { silu_and_mul(input, -1, half_out); }, half_out, "out", kType);
    expect_rejected([&] { silu_and_mul(odd, -1, odd_out); }, odd_out, "input", kArg);
    expect_rejected([&] { silu_and_mul(input, 2, out); }, out, "dim", kArg);
    expect_rejected([&] { silu_and_mul(input, -3, out); }, out, "dim", kArg);
    expect_rejected([&] { silu_and_mul(input, -1, full_out); }, full_out, "out", kArg);
    expect_rejected([&] { silu_and_mul(input, 0, out); }, out, "out", kArg);  // [2, 64] expected
    expect_rejected([&] { silu_and_mul(scalar, 0, out); }, out, "input", kArg);
    const Tensor broadcast_out = out.view().with_shape({4, 32}, {0, 1});
    expect_rejected([&] { silu_and_mul(input, -1, broadcast_out); }, out, "out", kArg);
  });
}

// NaN (either sign) and ±inf in both halves, every float dtype, vector bodies and tails: as
// float64, with silu(+inf) = +inf and silu(-inf) = 0 (its limit), so silu(-inf) · inf is NaN.
TEST(SiluAndMul, NonFiniteValuesPropagate) {
  testing::for_each_implementation("silu_and_mul", [&](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      for (std::int64_t d : {7, 37, 4097}) {
        SCOPED_TRACE(::testing::Message() << name_of(dtype) << " d " << d);
        std::mt19937_64 rng(d);
        auto input = testing::random_nonfinite_tensor({3, 2 * d}, dtype, rng, Layout::kStrided, 4);
        auto out = testing::poisoned({3, d}, dtype);
        silu_and_mul(input, -1, out, ctx);
        EXPECT_EQ(testing::compare(out.view(), reference(input, 1), testing::tolerance_for(dtype)),
                  "");
      }
    }
  });
}

}  // namespace
}  // namespace tileops::ops
