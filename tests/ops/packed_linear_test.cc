// pack_linear_weight + linear_packed against a float64 reference, for every dtype: decode rows
// (M <= 16; x's rows as rows up to packed_rows_path_max(), on every target), chunks of 16 rows over
// batches of groups (M > 16, N > 512), K across blocks and odd K (bfloat16 pairs), N off multiples
// of 16, strided weights, inputs and outputs, 1-D and 3-D inputs, bias or none, empty K, every SIMD
// target, the class form, and bad inputs.
#include "tileops/ops/packed_linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "src/ops/cpu/simd/amx_kernels.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/reference_ops.h"
#include "tests/support/simd_targets.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

using testing::dot_tolerance;
using testing::expect_rejected;
using testing::Layout;

// The packed form of weight, in storage poisoned first (an element pack_linear_weight skipped
// would be NaN and show in every result that reads it).
TensorStorage packed_of(const Tensor& weight) {
  auto packed = testing::poisoned(
      {packed_linear_weight_numel(weight.size(0), weight.size(1), weight.dtype())}, weight.dtype());
  pack_linear_weight(weight, packed.view());
  return packed;
}

class PackedLinearTest : public ::testing::TestWithParam<DataType> {
 protected:
  void check(const Dims& input_shape, std::int64_t n, bool with_bias, Layout layout) {
    const DataType dtype = GetParam();
    const std::int64_t k = input_shape.back();
    SCOPED_TRACE(::testing::Message()
                 << "input " << input_shape.to_string() << " N=" << n << " bias=" << with_bias
                 << " " << testing::layout_name(layout));
    std::mt19937_64 rng(static_cast<std::uint64_t>(input_shape.product() * 7 + n));
    auto input = testing::random_tensor(input_shape, dtype, rng, layout);
    auto weight = testing::random_tensor({n, k}, dtype, rng, layout);
    auto bias = testing::random_tensor({n}, dtype, rng, layout);
    Dims out_shape = input_shape;
    out_shape[out_shape.size() - 1] = n;
    auto out = testing::poisoned(out_shape, dtype, layout);
    const auto packed = packed_of(weight.view());
    linear_packed(input, packed.view(), with_bias ? bias.view() : Tensor(), out);
    const Tensor bias_view = bias.view();
    const auto expected =
        testing::reference::linear(input, weight, with_bias ? &bias_view : nullptr);
    EXPECT_EQ(testing::compare(out.view(), expected, dot_tolerance(dtype, k)), "");
  }
};

TEST_P(PackedLinearTest, DecodeRows) {
  for (const std::int64_t m : {1, 2, 3, 5, 16}) {
    check({m, 131}, 37, true, Layout::kContiguous);
    check({m, 64}, 9, false, Layout::kStrided);
  }
  check({16, 600}, 48, true, Layout::kContiguous);  // three K blocks, the last 88 long
  check({4, 513}, 17, false, Layout::kStrided);     // odd K: bfloat16's last pair padded
  check({1, 1}, 1, true, Layout::kContiguous);
}

TEST_P(PackedLinearTest, ChunksOfRowsAndBatchesOfGroups) {
  check({17, 70}, 45, true, Layout::kContiguous);
  check({40, 300}, 33, false, Layout::kStrided);
  check({35, 260}, 600, true, Layout::kContiguous);  // 38 groups: batches of 16 or 32
  check({2, 9, 24}, 30, true, Layout::kStrided);     // 3-D: rows through both leading dims
  check({50}, 20, true, Layout::kContiguous);        // a 1-D input is one row
}

TEST_P(PackedLinearTest, EveryTarget) {
  testing::for_each_simd_target([&] {
    check({16, 300}, 40, true, Layout::kContiguous);
    check({20, 77}, 19, false, Layout::kStrided);
  });
}

// Up to packed_rows_path_max() rows (4 on AVX-512, 16 with fewer lanes) x's rows stay rows and
// the weight rows are the lanes, in passes of up to packed_rows_pass_max() rows (6 for float32
// with 8 lanes, else 4): every count of rows around these limits, on every target, across K
// blocks, with an odd K and N off multiples of 16.
TEST_P(PackedLinearTest, RowsAsRowsOnEveryTarget) {
  testing::for_each_simd_target([&] {
    for (const std::int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16}) {
      check({m, 600}, 37, m % 2 == 1, m % 3 == 0 ? Layout::kStrided : Layout::kContiguous);
    }
    check({3, 513}, 17, true, Layout::kStrided);  // odd K: bfloat16's last pair padded
    check({2, 7}, 70, false, Layout::kContiguous);
  });
}

TEST_P(PackedLinearTest, EmptyKGivesTheBias) {
  const DataType dtype = GetParam();
  std::mt19937_64 rng(5);
  auto input = testing::random_tensor({3, 0}, dtype, rng);
  auto weight = testing::random_tensor({20, 0}, dtype, rng);
  auto bias = testing::random_tensor({20}, dtype, rng);
  auto out = testing::poisoned({3, 20}, dtype);
  linear_packed(input, packed_of(weight.view()).view(), bias, out);
  std::vector<double> expected;
  const auto b = testing::to_doubles(bias);
  for (int i = 0; i < 3; ++i) expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(testing::compare(out.view(), expected, testing::tolerance_for(dtype)), "");
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, PackedLinearTest,
                         ::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                           DataType::kBFloat16));

TEST(PackedLinear, SizeOfThePackedForm) {
  EXPECT_EQ(packed_linear_weight_numel(4096, 4096, DataType::kBFloat16), 4096 * 4096);
  EXPECT_EQ(packed_linear_weight_numel(17, 5, DataType::kFloat32), 32 * 5);
  EXPECT_EQ(packed_linear_weight_numel(17, 5, DataType::kBFloat16), 32 * 6);
  EXPECT_EQ(packed_linear_weight_numel(0, 5, DataType::kFloat16), 0);
  EXPECT_THROW(packed_linear_weight_numel(-1, 5, DataType::kFloat32), Error);
  EXPECT_THROW(packed_linear_weight_numel(1, 5, DataType::kInt32), Error);
}

// Packing pays for every float dtype but bfloat16 where AMX is on (linear then multiplies the
// [N, K] rows' tiles in place); other dtypes have no packed form.
TEST(PackedLinear, WhetherPackingPays) {
  EXPECT_TRUE(linear_packing_pays(DataType::kFloat32));
  EXPECT_TRUE(linear_packing_pays(DataType::kFloat16));
  EXPECT_EQ(linear_packing_pays(DataType::kBFloat16), !cpu::amx_bf16_enabled());
  try {
    linear_packing_pays(DataType::kInt8);
    ADD_FAILURE() << "int8 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'dtype'"), std::string::npos) << e.what();
  }
}

// Sizes of the packed form beyond int64 are an error naming the operator and argument, never a
// wrapped count: (2^40, 2^40) wrapped to 0 and (2^62, 3) to a negative number, and a broadcast
// weight [1, 2^60] was then packed into a 0-element buffer.
TEST(PackedLinear, PackedSizesBeyondInt64AreRefused) {
  const std::int64_t big = std::int64_t{1} << 40;
  const auto expect_overflow = [](const auto& call, const std::string& names) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  };
  const std::string numel = "packed_linear_weight_numel: arguments 'n' and 'k'";
  expect_overflow([&] { packed_linear_weight_numel(big, big, DataType::kFloat32); }, numel);
  expect_overflow([&] { packed_linear_weight_numel(std::int64_t{1} << 62, 3, DataType::kFloat32); },
                  numel);
  expect_overflow([&] { packed_linear_weight_numel(INT64_MAX, 1, DataType::kFloat16); }, numel);
  expect_overflow([&] { packed_linear_weight_numel(1, INT64_MAX, DataType::kBFloat16); }, numel);
  // Fits in elements, not in bytes.
  expect_overflow(
      [&] { packed_linear_weight_numel(16, std::int64_t{1} << 59, DataType::kFloat32); }, numel);

  const DataType f32 = DataType::kFloat32;
  auto one = testing::poisoned({1}, f32);
  const Tensor broadcast(one.data(), Dims{1, std::int64_t{1} << 60}, Dims{0, 0}, f32);
  auto guard = testing::poisoned({64}, f32);  // under a 0-element view: nothing may land there
  const Tensor packed_empty(guard.data(), Dims{0}, f32);
  expect_rejected([&] { pack_linear_weight(broadcast, packed_empty); }, guard, "weight",
                  ErrorKind::kInvalidArgument, {"pack_linear_weight", "overflows int64"});
  // linear_packed forms the same size from input's K and out's N.
  auto out = testing::poisoned({1, 1}, f32);
  expect_rejected([&] { linear_packed(broadcast, packed_empty, Tensor(), out); },
                  std::vector<const TensorStorage*>{&out, &guard}, "packed",
                  ErrorKind::kInvalidArgument, {"linear_packed", "overflows int64"});

  // A broadcast input of 2^58 rows fits, its workspace (16·K + 64 floats a row and more) does
  // not: once a wrapped byte count. packed, input and out lie apart in one arena.
  auto arena = testing::poisoned({64}, f32);
  auto* base = static_cast<float*>(arena.data());
  auto small_weight = testing::poisoned({1, 1}, f32);
  const Tensor packed(base, Dims{packed_linear_weight_numel(1, 1, f32)}, f32);
  pack_linear_weight(small_weight, packed);
  const std::int64_t rows = std::int64_t{1} << 58;
  const Tensor input(base + 16, Dims{rows, 1}, Dims{0, 0}, f32);
  const Tensor huge_out(base + 32, Dims{rows, 1}, f32);
  expect_rejected([&] { linear_packed(input, packed, Tensor(), huge_out); }, arena, "input",
                  ErrorKind::kInvalidArgument, {"linear_packed", "overflows int64"});
}

TEST(PackedLinear, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(3);
  const DataType bf16 = DataType::kBFloat16;
  auto input = testing::random_tensor({2, 40}, bf16, rng);
  auto weight = testing::random_tensor({24, 40}, bf16, rng);
  auto out = testing::poisoned({2, 24}, bf16);
  const LinearPacked op(input, packed_of(weight.view()).view(), Tensor(), out);
  for (int round = 0; round < 3; ++round) {
    auto x = testing::random_tensor({2, 40}, bf16, rng);
    auto w = testing::random_tensor({24, 40}, bf16, rng);
    auto y = testing::poisoned({2, 24}, bf16);
    op(x, packed_of(w.view()).view(), Tensor(), y);
    EXPECT_EQ(testing::compare(y.view(), testing::reference::linear(x, w, nullptr),
                               dot_tolerance(bf16, 40)),
              "");
  }
}

TEST(PackedLinear, RejectsBadInputs) {
  std::mt19937_64 rng(1);
  const DataType f32 = DataType::kFloat32;
  auto input = testing::random_tensor({4, 8}, f32, rng);
  auto weight = testing::random_tensor({5, 8}, f32, rng);
  auto packed = packed_of(weight.view());
  auto packed_bad_size = testing::poisoned({packed_linear_weight_numel(5, 7, f32)}, f32);
  auto packed_bf16 = testing::poisoned({packed_linear_weight_numel(5, 8, DataType::kBFloat16)},
                                       DataType::kBFloat16);
  auto packed_strided = testing::poisoned({packed.view().numel()}, f32, Layout::kStrided);
  auto packed_2d = testing::poisoned({16, 8}, f32);
  auto bias_bad = testing::random_tensor({6}, f32, rng);
  auto out = testing::poisoned({4, 5}, f32);
  auto out_bad = testing::poisoned({3, 5}, f32);
  auto weight_3d = testing::random_tensor({1, 5, 8}, f32, rng);
  auto weight_int = testing::random_tensor({5, 8}, DataType::kInt32, rng);

  expect_rejected([&] { linear_packed(input, packed_bad_size, Tensor(), out); }, out, "packed",
                  ErrorKind::kInvalidArgument, {"pack_linear_weight"});
  expect_rejected([&] { linear_packed(input, packed_bf16, Tensor(), out); }, out, "packed",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { linear_packed(input, packed_strided, Tensor(), out); }, out, "packed");
  expect_rejected([&] { linear_packed(input, packed_2d, Tensor(), out); }, out, "packed");
  expect_rejected([&] { linear_packed(input, packed, bias_bad, out); }, out, "bias");
  expect_rejected([&] { linear_packed(input, packed, Tensor(), out_bad); }, out_bad, "out");
  expect_rejected([&] { linear_packed(input, packed, Tensor(), packed); }, packed, "out");

  expect_rejected([&] { pack_linear_weight(weight_3d, packed); }, packed, "weight");
  expect_rejected([&] { pack_linear_weight(weight_int, packed); }, packed, "weight",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { pack_linear_weight(weight, packed_bad_size); }, packed_bad_size, "packed");
  expect_rejected([&] { pack_linear_weight(weight, packed_strided); }, packed_strided, "packed");
}

TEST(PackedLinear, NativeIsTheOnlyImplementation) {
  EXPECT_EQ(active_implementation_names("linear_packed", DeviceType::kCpu),
            std::vector<std::string>{"native"});
  EXPECT_EQ(active_implementation_names("pack_linear_weight", DeviceType::kCpu),
            std::vector<std::string>{"native"});
}

// NaN (either sign) and ±inf in input, packed weight and bias give what float64 gives (0·NaN
// and inf - inf are NaN; no zero input skipped): decode rows and chunks, every SIMD target.
TEST_P(PackedLinearTest, NonFiniteValues) {
  const DataType dtype = GetParam();
  const double nan = NAN, inf = INFINITY;
  testing::for_each_simd_target([&] {
    for (const std::int64_t m : {1, 5, 40}) {
      SCOPED_TRACE(::testing::Message() << "M=" << m);
      const std::int64_t n = 37, k = 67;
      std::mt19937_64 rng(static_cast<std::uint64_t>(m));
      auto input = testing::random_tensor({m, k}, dtype, rng);
      auto weight = testing::random_tensor({n, k}, dtype, rng);
      auto bias = testing::random_tensor({n}, dtype, rng);
      std::vector<double> x = testing::to_doubles(input), w = testing::to_doubles(weight);
      std::vector<double> b = testing::to_doubles(bias);
      x[0] = 0.0, x[k - 1] = inf, x[(m - 1) * k + 3] = -nan;
      w[2 * k] = nan, w[5 * k + 66] = -inf, w[36 * k + 1] = inf;
      b[9] = nan, b[10] = inf, b[36] = -inf;
      testing::from_doubles(input, x), testing::from_doubles(weight, w);
      testing::from_doubles(bias, b);
      auto out = testing::poisoned({m, n}, dtype);
      const auto packed = packed_of(weight.view());
      linear_packed(input, packed.view(), bias, out);
      const Tensor bias_view = bias.view();
      EXPECT_EQ(testing::compare(out.view(), testing::reference::linear(input, weight, &bias_view),
                                 dot_tolerance(dtype, k)),
                "");
    }
  });
}

}  // namespace
}  // namespace tileops::ops
