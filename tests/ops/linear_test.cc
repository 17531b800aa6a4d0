// linear against a float64 reference, for every dtype and every active implementation: decode
// rows (M = 1..16, the weight-streaming path; up to 48-64 in chunks of it), prefill rows, 3-D and
// 1-D inputs, strided operands, bias or none, the class form on new data, and bad inputs.
#include "tileops/ops/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

using testing::dot_tolerance;

using Param = std::tuple<DataType, int>;

class LinearTest : public ::testing::TestWithParam<Param> {
 protected:
  void check(const Dims& input_shape, std::int64_t n, bool with_bias, Layout layout) {
    const auto [dtype, index] = GetParam();
    const std::int64_t k = input_shape.back();
    SCOPED_TRACE(::testing::Message()
                 << "input " << input_shape.to_string() << " N=" << n << " bias=" << with_bias
                 << " " << testing::layout_name(layout));
    std::mt19937_64 rng(static_cast<std::uint64_t>(input_shape.product() + n));
    auto input = testing::random_tensor(input_shape, dtype, rng, layout);
    auto weight = testing::random_tensor({n, k}, dtype, rng, layout);
    auto bias = testing::random_tensor({n}, dtype, rng, layout);
    Dims out_shape = input_shape;
    out_shape[out_shape.size() - 1] = n;
    auto out = testing::poisoned(out_shape, dtype, layout);
    Context ctx;
    ctx.implementation_index = index;
    linear(input, weight, with_bias ? bias.view() : Tensor(), out, ctx);
    const Tensor bias_view = bias.view();
    const auto expected =
        testing::reference::linear(input, weight, with_bias ? &bias_view : nullptr);
    EXPECT_EQ(testing::compare(out.view(), expected, dot_tolerance(dtype, k)), "");
  }
};

TEST_P(LinearTest, DecodeRows) {
  for (const std::int64_t m : {1, 2, 3, 5, 16}) {
    check({m, 131}, 37, true, Layout::kContiguous);
    check({m, 64}, 9, false, Layout::kStrided);
  }
}

TEST_P(LinearTest, PrefillRowsAndBatches) {
  check({17, 70}, 45, true, Layout::kContiguous);    // decode path over chunks of 16 and 1
  check({40, 257}, 33, false, Layout::kContiguous);  // ... 16, 16, 8
  check({64, 40}, 21, true, Layout::kStrided);       // float32/float16 chunked, bfloat16 packed
  check({65, 40}, 21, true, Layout::kContiguous);    // the packed GEMM
  check({70, 600}, 100, true, Layout::kContiguous);  // ... bias in the last K block's store
  check({300, 19}, 50, false, Layout::kStrided);
  check({2, 9, 24}, 30, true, Layout::kContiguous);  // batch folds into rows
  check({2, 9, 24}, 30, true, Layout::kStrided);     // batch as separate GEMMs
  check({2, 3, 24}, 30, false, Layout::kStrided);    // decode per batch
  check({50}, 20, true, Layout::kContiguous);        // a 1-D input is one row
}

// NaN (either sign) and ±inf in input, weight and bias give what float64 gives (0·NaN and
// inf - inf are NaN; no zero input skipped): decode rows, prefill rows and the packed GEMM.
TEST_P(LinearTest, NonFiniteValues) {
  const auto [dtype, index] = GetParam();
  const double nan = NAN, inf = INFINITY;
  for (const std::int64_t m : {1, 5, 17, 65}) {
    SCOPED_TRACE(::testing::Message() << "M=" << m);
    const std::int64_t n = 33, k = 70;
    std::mt19937_64 rng(static_cast<std::uint64_t>(m));
    auto input = testing::random_tensor({m, k}, dtype, rng);
    auto weight = testing::random_tensor({n, k}, dtype, rng);
    auto bias = testing::random_tensor({n}, dtype, rng);
    std::vector<double> x = testing::to_doubles(input), w = testing::to_doubles(weight);
    std::vector<double> b = testing::to_doubles(bias);
    x[0] = 0.0, x[k - 1] = inf;                            // row 0
    x[(m - 1) * k + 3] = -nan;                             // the last row
    w[2 * k] = nan, w[5 * k + 69] = -inf, w[7 * k] = inf;  // row 0 · w row 2: 0·NaN
    b[9] = nan, b[10] = inf, b[32] = -inf;
    testing::from_doubles(input, x), testing::from_doubles(weight, w);
    testing::from_doubles(bias, b);
    auto out = testing::poisoned({m, n}, dtype);
    Context ctx;
    ctx.implementation_index = index;
    linear(input, weight, bias, out, ctx);
    const Tensor bias_view = bias.view();
    EXPECT_EQ(testing::compare(out.view(), testing::reference::linear(input, weight, &bias_view),
                               dot_tolerance(dtype, k)),
              "");
  }
}

std::vector<int> linear_indices() {
  return active_implementation_indices("linear", DeviceType::kCpu);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndImplementations, LinearTest,
                         ::testing::Combine(::testing::Values(DataType::kFloat32,
                                                              DataType::kFloat16,
                                                              DataType::kBFloat16),
                                            ::testing::ValuesIn(linear_indices())));

TEST(Linear, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(3);
  const DataType bf16 = DataType::kBFloat16;
  auto input = testing::random_tensor({2, 40}, bf16, rng);
  auto weight = testing::random_tensor({24, 40}, bf16, rng);
  auto out = testing::poisoned({2, 24}, bf16);
  const Linear op(input, weight, Tensor(), out);
  for (int round = 0; round < 3; ++round) {
    auto x = testing::random_tensor({2, 40}, bf16, rng);
    auto w = testing::random_tensor({24, 40}, bf16, rng);
    auto y = testing::poisoned({2, 24}, bf16);
    op(x, w, Tensor(), y);
    EXPECT_EQ(testing::compare(y.view(), testing::reference::linear(x, w, nullptr),
                               dot_tolerance(bf16, 40)),
              "");
  }
}

TEST(Linear, RejectsBadInputs) {
  std::mt19937_64 rng(1);
  const DataType f32 = DataType::kFloat32;
  auto input = testing::random_tensor({4, 8}, f32, rng);
  auto weight = testing::random_tensor({5, 8}, f32, rng);
  auto weight_bad_k = testing::random_tensor({5, 7}, f32, rng);
  auto weight_bf16 = testing::random_tensor({5, 8}, DataType::kBFloat16, rng);
  auto weight_3d = testing::random_tensor({1, 5, 8}, f32, rng);
  auto bias_bad = testing::random_tensor({6}, f32, rng);
  auto out = testing::poisoned({4, 5}, f32);
  auto out_bad = testing::poisoned({4, 6}, f32);
  expect_rejected([&] { linear(input, weight_bad_k, Tensor(), out); }, out, "weight");
  expect_rejected([&] { linear(input, weight_bf16, Tensor(), out); }, out, "weight",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { linear(input, weight_3d, Tensor(), out); }, out, "weight");
  expect_rejected([&] { linear(input, weight, bias_bad, out); }, out, "bias");
  expect_rejected([&] { linear(input, weight, Tensor(), out_bad); }, out_bad, "out");
}

}  // namespace
}  // namespace tileops::ops
