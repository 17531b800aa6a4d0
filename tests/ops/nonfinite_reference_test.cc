// The NaN/Inf cases of the operator tests rest on two things checked here: the float64
// references propagate NaN and Inf (a max that drops NaN would hide a kernel that does too), and
// compare() accepts NaN only where NaN is expected, and infinities only equal.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/support/reference_attention.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"

namespace tileops::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Compare, NaNOnlyWhereExpectedAndInfinitiesExactly) {
  TensorStorage t({4}, DataType::kFloat32);
  from_doubles(t, {kNaN, -kNaN, kInf, 1.0});
  EXPECT_EQ(compare(t, {kNaN, kNaN, kInf, 1.0}, {1e-5, 1e-5}), "");
  EXPECT_NE(compare(t, {kNaN, 0.0, kInf, 1.0}, {1e-5, 1e-5}), "");    // NaN where 0 expected
  EXPECT_NE(compare(t, {kNaN, kNaN, kInf, kNaN}, {1e-5, 1e-5}), "");  // 1 where NaN expected
  EXPECT_NE(compare(t, {kNaN, kNaN, -kInf, 1.0}, {1e-5, 1e-5}), "");  // the wrong infinity
  EXPECT_NE(compare(t, {kNaN, kNaN, 3e38, 1.0}, {1.0, 1.0}), "");     // inf is not close to 3e38
}

TEST(References, PropagateNaNAndInf) {
  // softmax: a NaN, a +inf or only -inf make the row NaN; -inf alone gives 0.
  const auto soft =
      reference::softmax_rows({kNaN, 1.0, 2.0, kInf, -kInf, -kInf, -kInf, 0.0}, 2, 1.0, false, 1);
  for (int i : {0, 1, 2, 3, 4, 5}) EXPECT_TRUE(std::isnan(soft[i])) << i;
  EXPECT_EQ(soft[6], 0.0);
  EXPECT_EQ(soft[7], 1.0);
  // rms_norm: a NaN row is NaN; an inf makes the scale 0 (inf · 0 is NaN, the rest 0).
  const auto norm = reference::rms_norm({kNaN, 1.0, kInf, 2.0}, {1.0, 1.0}, 1e-6, 2);
  EXPECT_TRUE(std::isnan(norm[0]) && std::isnan(norm[1]) && std::isnan(norm[2]));
  EXPECT_EQ(norm[3], 0.0);
  EXPECT_EQ(reference::silu(-kInf), 0.0);
  EXPECT_EQ(reference::silu(kInf), kInf);
  EXPECT_TRUE(std::isnan(reference::silu(kNaN)));
  // attention, one head of size 1 over two keys: a NaN query or an all-NaN key cache gives NaN,
  // a NaN value only where its key is visible (causal: the second query alone).
  reference::AttentionSpec spec;
  spec.causal = true;
  const std::vector<std::int64_t> cu = {0, 2};
  EXPECT_TRUE(
      std::isnan(reference::attention({kNaN, 1.0}, {1.0, 2.0}, {3.0, 4.0}, cu, cu, spec)[0]));
  const auto all_nan_keys =
      reference::attention({1.0, 1.0}, {kNaN, kNaN}, {3.0, 4.0}, cu, cu, spec);
  EXPECT_TRUE(std::isnan(all_nan_keys[0]) && std::isnan(all_nan_keys[1]));
  const auto nan_value = reference::attention({1.0, 1.0}, {1.0, 2.0}, {3.0, kNaN}, cu, cu, spec);
  EXPECT_EQ(nan_value[0], 3.0);
  EXPECT_TRUE(std::isnan(nan_value[1]));
  // A row that sees no key keeps its zeros (2 queries, 1 key: the first sees none).
  const std::vector<std::int64_t> cu_kv = {0, 1};
  EXPECT_EQ(reference::attention({1.0, 1.0}, {kNaN}, {kNaN}, cu, cu_kv, spec)[0], 0.0);
}

}  // namespace
}  // namespace tileops::testing
