// gemm and matmul against a float64 reference, for every dtype and every active implementation:
// square, skinny (M = 1, 3, 16), tall, K past one cache block and N past one column block, tails
// of every vector width, transposed and strided operands, C rows with gaps, alpha/beta, broadcast
// batches, the class form on new data, and bad inputs.
#include "tileops/ops/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/reference_ops.h"
#include "tests/support/scoped_env.h"
#include "tests/support/simd_targets.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/matmul.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

using testing::dot_tolerance;

Dims matrix_shape(std::int64_t rows, std::int64_t cols, bool transposed) {
  return transposed ? Dims{cols, rows} : Dims{rows, cols};
}

using Param = std::tuple<DataType, int>;

class GemmTest : public ::testing::TestWithParam<Param> {
 protected:
  // c = alpha·op(a)·op(b) + beta·c for one (M, N, K) in one layout and transpose combination.
  void check(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, Layout layout,
             double alpha = 1.0, double beta = 0.0) {
    const auto [dtype, index] = GetParam();
    SCOPED_TRACE(::testing::Message()
                 << "M=" << m << " N=" << n << " K=" << k << " ta=" << ta << " tb=" << tb << " "
                 << testing::layout_name(layout) << " alpha=" << alpha << " beta=" << beta);
    std::mt19937_64 rng(static_cast<std::uint64_t>(m * 131 + n * 7 + k));
    auto a = testing::random_tensor(matrix_shape(m, k, ta), dtype, rng, layout);
    auto b = testing::random_tensor(matrix_shape(k, n, tb), dtype, rng, layout);
    auto c = beta == 0.0 ? testing::poisoned({m, n}, dtype, layout)
                         : testing::random_tensor({m, n}, dtype, rng, layout);
    auto expected =
        testing::reference::matmul(testing::to_doubles(a), a.view().shape(), ta,
                                   testing::to_doubles(b), b.view().shape(), tb, {m, n});
    if (beta != 0.0) {
      const auto old = testing::to_doubles(c);
      for (std::size_t i = 0; i < expected.size(); ++i)
        expected[i] = alpha * expected[i] + beta * old[i];
    } else {
      for (double& e : expected) e *= alpha;
    }
    Context ctx;
    ctx.implementation_index = index;
    gemm(a, b, alpha, beta, ta, tb, c, ctx);
    EXPECT_EQ(testing::compare(c.view(), expected, dot_tolerance(dtype, k)), "");
  }
};

TEST_P(GemmTest, SquareSkinnyAndTallShapes) {
  for (const auto& [m, n, k] : {std::tuple<int, int, int>{64, 64, 64},
                                {1, 37, 129},
                                {3, 100, 67},
                                {16, 50, 300},
                                {17, 40, 33},
                                {257, 31, 513},
                                {5, 7, 1},
                                {1, 1, 1},
                                {20, 1100, 9},
                                {3100, 5, 3},
                                {2, 3, 0}}) {
    check(m, n, k, false, false, Layout::kContiguous);
  }
}

TEST_P(GemmTest, TransposedAndStridedOperands) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const Layout layout : {Layout::kContiguous, Layout::kStrided}) {
        check(23, 45, 71, ta, tb, layout);
        check(3, 45, 71, ta, tb, layout);  // decode path when op(b)'s columns are contiguous
      }
    }
  }
}

TEST_P(GemmTest, EverySimdTarget) {
  // The native engine's register tiles, strip widths and decode groups differ per target; on
  // CPUs with AMX, bfloat16 takes the tile path unless TILEOPS_AMX=0.
  for (const char* amx : {"1", "0"}) {
    SCOPED_TRACE(std::string("TILEOPS_AMX=") + amx);
    const testing::ScopedEnv amx_env("TILEOPS_AMX", amx);
    testing::for_each_simd_target([&] {
      check(37, 101, 600, false, false, Layout::kContiguous);  // two K blocks on every target
      check(37, 101, 300, true, true, Layout::kStrided);
      check(9, 50, 70, false, true, Layout::kContiguous);  // decode path
      // decode with 12 whole weight tiles (groups of 4 per thread) and 8 rows more
      check(5, 200, 45, false, true, Layout::kContiguous);
    });
  }
}

TEST_P(GemmTest, LinearWeightLayouts) {
  // op(b)'s columns contiguous, as a linear's weight: bfloat16 on AMX reads it in place up to 512
  // rows (K blocks of 1024, groups of 32 weight tiles, K tails, a partial last tile).
  check(40, 530, 1100, false, true, Layout::kContiguous);
  check(200, 33, 64, false, true, Layout::kContiguous);
  check(600, 20, 50, false, true, Layout::kContiguous);
}

TEST_P(GemmTest, AlphaBeta) {
  check(30, 20, 50, false, false, Layout::kContiguous, 0.5, 2.0);
  check(4, 20, 50, false, true, Layout::kStrided, -1.5, 0.25);
  check(7, 9, 0, false, false, Layout::kContiguous, 2.0, -1.0);  // K = 0: c = beta·c
}

TEST_P(GemmTest, BatchedWithSharedOperand) {
  const auto [dtype, index] = GetParam();
  std::mt19937_64 rng(11);
  auto a = testing::random_tensor({3, 9, 20}, dtype, rng, Layout::kStrided);
  auto b = testing::random_tensor({20, 13}, dtype, rng);
  auto c = testing::poisoned({3, 9, 13}, dtype);
  Context ctx;
  ctx.implementation_index = index;
  gemm(a, b, 1.0, 0.0, false, false, c, ctx);
  const auto expected =
      testing::reference::matmul(testing::to_doubles(a), {3, 9, 20}, false, testing::to_doubles(b),
                                 {20, 13}, false, {3, 9, 13});
  EXPECT_EQ(testing::compare(c.view(), expected, dot_tolerance(dtype, 20)), "");
}

TEST_P(GemmTest, MatmulBroadcastsBatchDims) {
  const auto [dtype, index] = GetParam();
  std::mt19937_64 rng(5);
  Context ctx;
  ctx.implementation_index = index;
  // [2, 1, M, K] · [3, K, N]ᵀ-layout → [2, 3, M, N]; also a shared a against batched b.
  auto a = testing::random_tensor({2, 1, 6, 19}, dtype, rng);
  auto b = testing::random_tensor({3, 11, 19}, dtype, rng, Layout::kStrided);
  auto c = testing::poisoned({2, 3, 6, 11}, dtype, Layout::kStrided);
  matmul(a, b, c, false, true, ctx);
  auto expected =
      testing::reference::matmul(testing::to_doubles(a), {2, 1, 6, 19}, false,
                                 testing::to_doubles(b), {3, 11, 19}, true, {2, 3, 6, 11});
  EXPECT_EQ(testing::compare(c.view(), expected, dot_tolerance(dtype, 19)), "");

  auto a2 = testing::random_tensor({19, 6}, dtype, rng);
  auto b2 = testing::random_tensor({4, 19, 40}, dtype, rng);
  auto c2 = testing::poisoned({4, 6, 40}, dtype);
  matmul(a2, b2, c2, true, false, ctx);
  expected = testing::reference::matmul(testing::to_doubles(a2), {19, 6}, true,
                                        testing::to_doubles(b2), {4, 19, 40}, false, {4, 6, 40});
  EXPECT_EQ(testing::compare(c2.view(), expected, dot_tolerance(dtype, 19)), "");
}

// C with unit column stride and gaps between its rows (a column slice of a wider matrix): a
// float32 C takes the last K block's whole tiles straight from the micro-kernel when alpha = 1
// and beta = 0, the epilogue otherwise; either way C's partial edge tiles come out right and the
// gaps stay as they were, on every SIMD target.
TEST_P(GemmTest, OutputRowsWithGaps) {
  const auto [dtype, index] = GetParam();
  const std::int64_t m = 37, n = 101, k = 600, ld = n + 5;
  const auto elem = static_cast<std::int64_t>(size_of(dtype));
  Context ctx;
  ctx.implementation_index = index;
  testing::for_each_simd_target([&] {
    for (const double alpha : {1.0, 0.5}) {
      SCOPED_TRACE(::testing::Message() << "alpha=" << alpha);
      std::mt19937_64 rng(23);
      auto a = testing::random_tensor({m, k}, dtype, rng);
      auto b = testing::random_tensor({n, k}, dtype, rng);  // op(b) = bᵀ: a linear's weight
      TensorStorage c({m, n}, {ld, 1}, dtype);
      c.fill_bytes(0xFF);
      auto expected = testing::reference::matmul(testing::to_doubles(a), {m, k}, false,
                                                 testing::to_doubles(b), {n, k}, true, {m, n});
      for (double& e : expected) e *= alpha;
      gemm(a, b, alpha, 0.0, false, true, c, ctx);
      EXPECT_EQ(testing::compare(c.view(), expected, dot_tolerance(dtype, k)), "");
      const auto* bytes = static_cast<const unsigned char*>(c.view().data());
      for (std::int64_t r = 0; r + 1 < m; ++r) {
        for (std::int64_t e = (r * ld + n) * elem; e < (r + 1) * ld * elem; ++e) {
          ASSERT_EQ(bytes[e], 0xFF) << "the gap after row " << r << " was written";
        }
      }
    }
  });
}

using Cell = std::tuple<std::int64_t, std::int64_t, double>;

// Sets elements (i, j) of op(x), x a matrix stored transposed when `transposed`.
void plant(const Tensor& x, bool transposed, std::initializer_list<Cell> cells) {
  std::vector<double> v = testing::to_doubles(x);
  for (const auto& [i, j, value] : cells) {
    v[static_cast<std::size_t>(transposed ? j * x.size(1) + i : i * x.size(1) + j)] = value;
  }
  testing::from_doubles(x, v);
}

// NaN (either sign) and ±inf in a, b and c (beta != 0) give what float64 gives: a NaN or
// inf + -inf term makes its dot product NaN, 0·inf and 0·NaN too (no zero is skipped), an inf
// term gives ±inf; on every SIMD target, with and without AMX, transposed and in the tails.
TEST_P(GemmTest, NonFiniteOperands) {
  const auto [dtype, index] = GetParam();
  const double nan = NAN, inf = INFINITY;
  const std::int64_t m = 37, n = 45, k = 71;
  const auto run = [&](bool ta, bool tb, double beta) {
    SCOPED_TRACE(::testing::Message() << "ta=" << ta << " tb=" << tb << " beta=" << beta);
    std::mt19937_64 rng(17);
    auto a = testing::random_tensor(matrix_shape(m, k, ta), dtype, rng);
    auto b = testing::random_tensor(matrix_shape(k, n, tb), dtype, rng, Layout::kStrided);
    auto c = testing::random_tensor({m, n}, dtype, rng);
    plant(a, ta,
          {{2, 5, nan}, {4, 7, inf}, {12, 1, inf}, {12, 2, inf}, {20, 70, -nan}, {36, 0, -inf}});
    std::vector<double> zero_row = testing::to_doubles(a);  // op(a) row 8: zeros
    for (std::int64_t p = 0; p < k; ++p) zero_row[ta ? p * m + 8 : 8 * k + p] = 0.0;
    testing::from_doubles(a, zero_row);
    plant(b, tb, {{0, 3, nan}, {10, 9, inf}, {70, 44, -inf}, {33, 20, -nan}, {1, 30, -1.0}});
    plant(c, false, {{1, 1, nan}, {36, 44, inf}, {0, 0, -inf}});
    auto expected =
        testing::reference::matmul(testing::to_doubles(a), a.view().shape(), ta,
                                   testing::to_doubles(b), b.view().shape(), tb, {m, n});
    const auto old = testing::to_doubles(c);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      expected[i] = 0.5 * expected[i] + (beta == 0.0 ? 0.0 : beta * old[i]);
    }
    Context ctx;
    ctx.implementation_index = index;
    gemm(a, b, 0.5, beta, ta, tb, c, ctx);
    EXPECT_EQ(testing::compare(c.view(), expected, dot_tolerance(dtype, k)), "");
  };
  for (const char* amx : {"1", "0"}) {
    SCOPED_TRACE(std::string("TILEOPS_AMX=") + amx);
    const testing::ScopedEnv amx_env("TILEOPS_AMX", amx);
    testing::for_each_simd_target([&] {
      run(false, false, 0.0);
      run(true, true, 2.0);
      run(false, true, 0.0);  // decode path and linear's weight layout
    });
  }
}

std::vector<int> gemm_indices() { return active_implementation_indices("gemm", DeviceType::kCpu); }

INSTANTIATE_TEST_SUITE_P(AllDtypesAndImplementations, GemmTest,
                         ::testing::Combine(::testing::Values(DataType::kFloat32,
                                                              DataType::kFloat16,
                                                              DataType::kBFloat16),
                                            ::testing::ValuesIn(gemm_indices())));

TEST(Gemm, ActiveImplementations) {
  const auto names = active_implementation_names("gemm", DeviceType::kCpu);
  std::string list;
  for (const auto& name : names) list += name + " ";
  std::cout << "active gemm implementations: " << list << "\n";
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "native");
#ifdef TILEOPS_EXPECT_ONEDNN
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[1], "onednn");
#else
  ASSERT_EQ(names.size(), 2u);
#endif
  EXPECT_EQ(names.back(), "tl");
  EXPECT_EQ(active_implementation_indices("gemm", DeviceType::kCpu).back(), 2);
  EXPECT_EQ(active_implementation_names("matmul", DeviceType::kCpu), names);
  EXPECT_EQ(active_implementation_names("linear", DeviceType::kCpu), names);
}

TEST(Gemm, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(3);
  auto a = testing::random_tensor({8, 30}, DataType::kFloat32, rng);
  auto b = testing::random_tensor({30, 12}, DataType::kFloat32, rng);
  auto c = testing::poisoned({8, 12}, DataType::kFloat32);
  const Gemm op(a, b, 2.0, 0.0, false, false, c);
  for (int round = 0; round < 3; ++round) {
    auto x = testing::random_tensor({8, 30}, DataType::kFloat32, rng);
    auto y = testing::random_tensor({30, 12}, DataType::kFloat32, rng);
    auto z = testing::poisoned({8, 12}, DataType::kFloat32);
    op(x, y, z);
    auto expected = testing::reference::matmul(testing::to_doubles(x), {8, 30}, false,
                                               testing::to_doubles(y), {30, 12}, false, {8, 12});
    for (double& e : expected) e *= 2.0;
    EXPECT_EQ(testing::compare(z.view(), expected, dot_tolerance(DataType::kFloat32, 30)), "");
  }
  auto other = testing::poisoned({9, 12}, DataType::kFloat32);
  EXPECT_THROW(op(a, b, other), Error);
}

TEST(Gemm, RejectsBadInputs) {
  std::mt19937_64 rng(1);
  const DataType f32 = DataType::kFloat32;
  auto a = testing::random_tensor({4, 8}, f32, rng);
  auto b = testing::random_tensor({8, 5}, f32, rng);
  auto b_bad_k = testing::random_tensor({7, 5}, f32, rng);
  auto b_half = testing::random_tensor({8, 5}, DataType::kFloat16, rng);
  auto a_int = testing::random_tensor({4, 8}, DataType::kInt32, rng);
  auto a_rank1 = testing::random_tensor({8}, f32, rng);
  auto a_rank4 = testing::random_tensor({1, 1, 4, 8}, f32, rng);
  auto c = testing::poisoned({4, 5}, f32);
  auto c_bad = testing::poisoned({4, 6}, f32);
  expect_rejected([&] { gemm(a, b_bad_k, 1, 0, false, false, c); }, c, "b",
                  ErrorKind::kInvalidArgument, {"K = 8"});
  expect_rejected([&] { gemm(a, b_half, 1, 0, false, false, c); }, c, "b", ErrorKind::kInvalidType);
  expect_rejected([&] { gemm(a_int, b, 1, 0, false, false, c); }, c, "a", ErrorKind::kInvalidType);
  expect_rejected([&] { gemm(a_rank1, b, 1, 0, false, false, c); }, c, "a");
  expect_rejected([&] { gemm(a_rank4, b, 1, 0, false, false, c); }, c, "a");
  expect_rejected([&] { gemm(a, b, 1, 0, false, false, c_bad); }, c_bad, "c");
  expect_rejected([&] { gemm(a, b, 1, 0, true, false, c); }, c, "b");  // op(a) is 8×4: K = 4
  expect_rejected([&] { gemm(a, b, std::nan(""), 0, false, false, c); }, c, "alpha");
  expect_rejected([&] { matmul(a, b_bad_k, c); }, c, "b");
  auto a3 = testing::random_tensor({2, 4, 8}, f32, rng);
  auto b3 = testing::random_tensor({3, 8, 5}, f32, rng);
  auto c3 = testing::poisoned({2, 4, 5}, f32);
  expect_rejected([&] { matmul(a3, b3, c3); }, c3, "b", ErrorKind::kInvalidArgument, {"broadcast"});
  Context ctx;
  ctx.implementation_index = 7;
  try {
    gemm(a, b, 1, 0, false, false, c, ctx);
    ADD_FAILURE() << "index 7 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

}  // namespace
}  // namespace tileops::ops
