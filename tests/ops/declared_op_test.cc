// Operators reached through their declarations (DeclaredOp): the by-name table agrees with the
// registry, calls give the typed functions' results, and malformed argument lists are refused
// with an error rather than read out of bounds.
#include "tileops/ops/declared_op.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>

#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/registry.h"

namespace tileops::ops {
namespace {

namespace ref = testing::reference;

template <typename Call>
void expect_invalid(Call&& call, const std::string& detail) {
  try {
    call();
    ADD_FAILURE() << "no error raised (" << detail << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(DeclaredOp, EveryRegisteredOperatorIsDeclaredButCat) {
  std::set<std::string> declared;
  for (const DeclaredOp* op : declared_ops()) {
    EXPECT_TRUE(declared.insert(std::string(op->name())).second) << op->name() << " twice";
    EXPECT_EQ(&declared_op(op->name()), op);
  }
  for (const std::string& op : registered_operators()) {
    // cat takes a list of tensors, which the vocabulary does not state.
    if (op != "cat") {
      EXPECT_EQ(declared.count(op), 1u) << op << " has no declaration";
    }
  }
  const auto registered = registered_operators();
  for (const std::string& op : declared) {
    EXPECT_NE(std::find(registered.begin(), registered.end(), op), registered.end())
        << op << " is declared but has no implementation";
  }
}

TEST(DeclaredOp, UnknownNameIsRefused) {
  expect_invalid([] { declared_op("no_such_op"); }, "'name'");
}

TEST(DeclaredOp, CallMatchesTheReference) {
  std::mt19937_64 rng(7);
  auto x = testing::random_tensor({3, 40}, DataType::kFloat32, rng, testing::Layout::kStrided);
  auto w = testing::random_tensor({40}, DataType::kFloat32, rng);
  const DeclaredOp& op = declared_op("rms_norm");
  const Tensor inputs[] = {x.view(), w.view(), Tensor()};
  const double attributes[] = {1e-5};
  EXPECT_EQ(op.output_shape(3, inputs, attributes), x.view().shape());
  EXPECT_EQ(op.output_dtype(3, inputs), DataType::kFloat32);
  auto out = testing::poisoned({3, 40}, DataType::kFloat32);
  const Tensor tensors[] = {x.view(), w.view(), out.view()};
  op.call(tensors, attributes, {});
  const ref::Values expected =
      ref::rms_norm(testing::to_doubles(x.view()), testing::to_doubles(w.view()), 1e-5, 40);
  EXPECT_TRUE(
      testing::compare(out.view(), expected, testing::tolerance_for(DataType::kFloat32)).empty());
}

TEST(DeclaredOp, MalformedListsAreRefused) {
  std::mt19937_64 rng(8);
  auto x = testing::random_tensor({2, 8}, DataType::kFloat32, rng);
  auto w = testing::random_tensor({8}, DataType::kFloat32, rng);
  auto out = testing::poisoned({2, 8}, DataType::kFloat32);
  const DeclaredOp& op = declared_op("rms_norm");
  const Tensor two[] = {x.view(), w.view()};
  const Tensor three[] = {x.view(), w.view(), out.view()};
  const double one[] = {1e-6};
  const double none[] = {0.0, 0.0};
  expect_invalid([&] { op.call(two, one, {}); },
                 "expected 3 tensors and 1 attributes, got 2 and 1");
  expect_invalid([&] { op.call(three, none, {}); }, "got 3 and 2");
  expect_invalid([&] { op.prepare(two, one, 0); }, "got 2 and 1");
  expect_invalid([&] { op.output_shape(0, three, one); }, "argument 0 is not an output");
  expect_invalid([&] { op.output_shape(9, three, one); }, "argument 9 is not an output");
  expect_invalid([&] { op.output_dtype(-1, three); }, "argument -1 is not an output");
  // A default Tensor for a required argument is refused as unusable, never read (a fuzz finding:
  // it once passed as an omitted optional one).
  const Tensor missing_input[] = {Tensor(), w.view(), out.view()};
  expect_invalid([&] { op.call(missing_input, one, {}); }, "a tensor with data");
  const Tensor missing_out[] = {x.view(), w.view(), Tensor()};
  expect_invalid([&] { op.call(missing_out, one, {}); }, "a tensor with data");
  // Hooks cast integer attributes: a value their type cannot hold is refused first.
  const DeclaredOp& silu = declared_op("silu_and_mul");
  auto wide = testing::random_tensor({2, 8}, DataType::kFloat32, rng);
  auto half = testing::poisoned({2, 4}, DataType::kFloat32);
  const Tensor silu_tensors[] = {wide.view(), half.view()};
  for (double dim : {1e300, -1e300, 0.5, std::numeric_limits<double>::quiet_NaN()}) {
    const double attribute[] = {dim};
    expect_invalid([&] { silu.call(silu_tensors, attribute, {}); }, "an int32 value");
  }
  const PreparedOperator prepared = op.prepare(three, one, 0);
  expect_invalid([&] { op.run(prepared, two, {}); }, "got 2 and 1");
}

// call() remembers a thread's last validated geometry per operator; a repeat must still refuse
// what depends on addresses (overlap, null data), and any other geometry is checked in full.
TEST(DeclaredOp, RepeatedGeometryStillChecksAddresses) {
  std::mt19937_64 rng(9);
  auto buffer = testing::random_tensor({4, 40}, DataType::kFloat32, rng);
  auto w = testing::random_tensor({40}, DataType::kFloat32, rng);
  auto out = testing::poisoned({3, 40}, DataType::kFloat32);
  auto* base = static_cast<float*>(buffer.view().data());
  const Tensor x(base, Dims{3, 40}, DataType::kFloat32);
  const Tensor x_shifted(base + 40, Dims{3, 40}, DataType::kFloat32);  // shares rows 1 and 2
  const DeclaredOp& op = declared_op("rms_norm");
  const double eps[] = {1e-5};
  const auto expected =
      ref::rms_norm(testing::to_doubles(x), testing::to_doubles(w.view()), 1e-5, 40);
  clear_cache();
  for (int repeat = 0; repeat < 2; ++repeat) {
    const Tensor good[] = {x, w.view(), out.view()};
    op.call(good, eps, {});
    EXPECT_EQ(cache_size(), 1u);
    const Tensor overlapping[] = {x, w.view(), x_shifted};
    expect_invalid([&] { op.call(overlapping, eps, {}); }, "memory apart from 'input'");
    const Tensor null_out[] = {x, w.view(), Tensor(nullptr, Dims{3, 40}, DataType::kFloat32)};
    expect_invalid([&] { op.call(null_out, eps, {}); }, "a tensor with data");
    auto short_w = testing::random_tensor({39}, DataType::kFloat32, rng);
    const Tensor bad_weight[] = {x, short_w.view(), out.view()};
    expect_invalid([&] { op.call(bad_weight, eps, {}); }, "'weight'");
    clear_cache();  // the repeat after clear_cache must fill the cache again
  }
  EXPECT_TRUE(
      testing::compare(out.view(), expected, testing::tolerance_for(DataType::kFloat32)).empty());
  // A hook that only reads geometry is skipped on a repeat; its rewritten attributes are kept.
  const DeclaredOp& silu = declared_op("silu_and_mul");
  auto wide = testing::random_tensor({2, 8}, DataType::kFloat32, rng);
  auto half = testing::poisoned({2, 4}, DataType::kFloat32);
  const Tensor silu_tensors[] = {wide.view(), half.view()};
  for (double dim : {-1.0, -1.0, 1.0}) {
    const double attribute[] = {dim};
    silu.call(silu_tensors, attribute, {});
  }
  auto odd = testing::random_tensor({2, 7}, DataType::kFloat32, rng);
  const Tensor odd_tensors[] = {odd.view(), half.view()};
  const double last[] = {-1.0};
  expect_invalid([&] { silu.call(odd_tensors, last, {}); }, "an even extent");
  const auto w_in = testing::to_doubles(wide.view());
  const auto got = testing::to_doubles(half.view());
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 4; ++c) {
      const double g = w_in[r * 8 + c];
      const double want = g / (1.0 + std::exp(-g)) * w_in[r * 8 + 4 + c];
      EXPECT_NEAR(got[r * 4 + c], want, 1e-5 * (1.0 + std::fabs(want)));
    }
  }
}

// A requested output (requested_output): omitted, it stays absent (nothing resolves into it,
// nothing is checked of it); given, its declared dtype, the hook's shape rule, writability and
// memory apart from the other arguments are checked like any output's.
constexpr OpDecl kWithStatistic =
    declare("with_statistic", "WithStatistic", "An output and a requested row statistic.",
            {input("x", kStandardFloat).rank_is(2),
             output("out", dtype_of(0)).shape_is(same_shape_as(0), "as x"),
             requested_output("row_stat", dtype_in({DataType::kFloat32})).rank_is(1)});
static_assert(is_requested_output(kWithStatistic.args[2]));
static_assert(!is_requested_output(kWithStatistic.args[1]));
Dims row_stat_shape(std::string_view /*op*/, int /*arg*/, std::span<const Tensor> t,
                    std::span<const double> /*attributes*/) {
  return Dims{t[0].size(0)};
}
constinit const DeclaredOp kWithStatisticOp{kWithStatistic, {.output_shape = row_stat_shape}};

TEST(DeclaredOp, RequestedOutputs) {
  std::mt19937_64 rng(10);
  auto x = testing::random_tensor({3, 8}, DataType::kFloat32, rng);
  auto out = testing::poisoned({3, 8}, DataType::kFloat32);
  auto stat = testing::poisoned({3}, DataType::kFloat32);
  const Tensor omitted[] = {x.view(), out.view(), Tensor()};
  const Problem p = kWithStatisticOp.problem(omitted, {});
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_FALSE(p.tensors[2].present);
  const Tensor given[] = {x.view(), out.view(), stat.view()};
  const Problem q = kWithStatisticOp.problem(given, {});
  EXPECT_TRUE(q.tensors[2].present);
  EXPECT_EQ(q.tensors[2].shape, Dims{3});
  EXPECT_EQ(kWithStatisticOp.output_shape(2, omitted, {}), Dims{3});
  EXPECT_EQ(kWithStatisticOp.output_dtype(2, omitted), DataType::kFloat32);
  auto half = testing::poisoned({3}, DataType::kFloat16);
  const Tensor wrong_dtype[] = {x.view(), out.view(), half.view()};
  try {
    kWithStatisticOp.problem(wrong_dtype, {});
    ADD_FAILURE() << "a float16 row_stat was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidType) << e.what();
    EXPECT_NE(std::string(e.what()).find("'row_stat'"), std::string::npos) << e.what();
  }
  auto matrix = testing::poisoned({3, 1}, DataType::kFloat32);
  const Tensor wrong_rank[] = {x.view(), out.view(), matrix.view()};
  expect_invalid([&] { kWithStatisticOp.problem(wrong_rank, {}); }, "'row_stat'");
  const Tensor into_input[] = {x.view(), out.view(), x.view().slice(0, 0, 1).with_shape({3}, {1})};
  expect_invalid([&] { kWithStatisticOp.problem(into_input, {}); }, "'row_stat'");
}

}  // namespace
}  // namespace tileops::ops
