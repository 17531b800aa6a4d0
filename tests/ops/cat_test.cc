// cat against a float64 reference: every run length tail, negative dims, strided and
// transposed inputs and outputs, several dtypes, empty inputs, the class form and bad inputs.
// cat moves bytes, so results must be exact (tolerance 0).
#include "tileops/ops/cat.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;

using testing::Layout;

constexpr testing::Tolerance kExact{0.0, 0.0};

// Row-major values of the concatenation: for every index of the dims before `dim`, each input's
// block of (its extent along dim) x (the product of the dims after dim) values in turn.
std::vector<double> reference(const std::vector<TensorStorage>& inputs, int dim) {
  const Dims& shape = inputs[0].view().shape();
  const int axis = dim < 0 ? dim + shape.size() : dim;
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (int d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<std::vector<double>> values;
  values.reserve(inputs.size());
  for (const TensorStorage& t : inputs) values.push_back(testing::to_doubles(t));
  std::vector<double> out;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const std::int64_t block = inputs[k].view().shape()[axis] * inner;
      out.insert(out.end(), values[k].begin() + o * block, values[k].begin() + (o + 1) * block);
    }
  }
  return out;
}

std::vector<Tensor> views(const std::vector<TensorStorage>& storages) {
  return {storages.begin(), storages.end()};
}

Dims with_extent(Dims shape, int dim, std::int64_t extent) {
  shape[dim < 0 ? dim + shape.size() : dim] = extent;
  return shape;
}

using Param = std::tuple<DataType, std::int64_t, int, Layout, Layout>;

class CatTest : public ::testing::TestWithParam<Param> {};

TEST_P(CatTest, MatchesFloat64Reference) {
  const auto [dtype, extent, dim, in_layout, out_layout] = GetParam();
  std::mt19937_64 rng(42);
  const Dims base{2, 3, 5};
  std::vector<TensorStorage> inputs;
  std::int64_t total = 0;
  for (std::int64_t e : {extent, std::int64_t{1}, std::int64_t{7}}) {
    inputs.push_back(testing::random_tensor(with_extent(base, dim, e), dtype, rng, in_layout));
    total += e;
  }
  auto out = testing::poisoned(with_extent(base, dim, total), dtype, out_layout);
  cat(views(inputs), dim, out);
  EXPECT_EQ(testing::compare(out.view(), reference(inputs, dim), kExact), "");
}

INSTANTIATE_TEST_SUITE_P(
    DtypesTailsDimsLayouts, CatTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16, DataType::kInt32, DataType::kInt8,
                                         DataType::kFloat64),
                       ::testing::Values(1, 7, 33, 4097), ::testing::Values(0, 1, -1),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided)));

TEST(Cat, EmptyInputs) {
  std::mt19937_64 rng(5);
  for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
    std::vector<TensorStorage> inputs;
    inputs.push_back(testing::random_tensor({4, 0, 3}, DataType::kFloat32, rng, layout));
    inputs.push_back(testing::random_tensor({4, 2, 3}, DataType::kFloat32, rng, layout));
    inputs.push_back(testing::random_tensor({4, 0, 3}, DataType::kFloat32, rng, layout));
    auto out = testing::poisoned({4, 2, 3}, DataType::kFloat32, layout);
    cat(views(inputs), 1, out);
    EXPECT_EQ(testing::compare(out.view(), reference(inputs, 1), kExact), "");
  }
  // Every input empty along dim, and an empty non-concatenated dim (null data is fine there).
  const Tensor empty(nullptr, {4, 0}, DataType::kFloat32);
  const Tensor both[] = {empty, empty};
  EXPECT_NO_THROW(cat(both, 1, Tensor(nullptr, {4, 0}, DataType::kFloat32)));
  const Tensor flat[] = {Tensor(nullptr, {0, 3}, DataType::kBFloat16),
                         Tensor(nullptr, {0, 2}, DataType::kBFloat16)};
  EXPECT_NO_THROW(cat(flat, -1, Tensor(nullptr, {0, 5}, DataType::kBFloat16)));
}

TEST(Cat, RankOneAndSingleInput) {
  std::mt19937_64 rng(6);
  std::vector<TensorStorage> inputs;
  inputs.push_back(testing::random_tensor({5}, DataType::kInt64, rng));
  inputs.push_back(testing::random_tensor({0}, DataType::kInt64, rng));
  inputs.push_back(testing::random_tensor({3}, DataType::kInt64, rng, Layout::kStrided));
  auto out = testing::poisoned({8}, DataType::kInt64);
  cat(views(inputs), -1, out);
  EXPECT_EQ(testing::compare(out.view(), reference(inputs, 0), kExact), "");

  std::vector<TensorStorage> single;
  single.push_back(testing::random_tensor({3, 4}, DataType::kBFloat16, rng, Layout::kStrided));
  auto copy = testing::poisoned({3, 4}, DataType::kBFloat16);
  cat(views(single), 0, copy);
  EXPECT_EQ(testing::compare(copy.view(), testing::to_doubles(single[0]), kExact), "");
}

TEST(Cat, TransposedAndBroadcastInputs) {
  std::mt19937_64 rng(8);
  auto a = testing::random_tensor({6, 4}, DataType::kFloat16, rng);
  const Tensor a_t = a.view().transpose(0, 1);  // [4, 6], strides [1, 4]
  auto b = testing::random_tensor({1, 3}, DataType::kFloat16, rng);
  const Tensor b_wide = b.view().with_shape({4, 3}, {0, 1});  // one row repeated
  const Tensor inputs[] = {a_t, b_wide};
  for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
    auto out = testing::poisoned({4, 9}, DataType::kFloat16, layout);
    cat(inputs, 1, out);
    const std::vector<double> at = testing::to_doubles(a_t);
    const std::vector<double> bw = testing::to_doubles(b_wide);
    std::vector<double> expected;
    for (int r = 0; r < 4; ++r) {
      expected.insert(expected.end(), at.begin() + r * 6, at.begin() + (r + 1) * 6);
      expected.insert(expected.end(), bw.begin() + r * 3, bw.begin() + (r + 1) * 3);
    }
    EXPECT_EQ(testing::compare(out.view(), expected, kExact), "");
  }
}

TEST(Cat, LargeCopiesAcrossThreads) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  std::mt19937_64 rng(9);
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
    for (int dim : {0, 1}) {
      std::vector<TensorStorage> inputs;
      inputs.push_back(testing::random_tensor({300, 700}, dtype, rng));
      inputs.push_back(testing::random_tensor({300, 700}, dtype, rng));
      auto out = testing::poisoned(dim == 0 ? Dims{600, 700} : Dims{300, 1400}, dtype);
      cat(views(inputs), dim, out, ctx);
      EXPECT_EQ(testing::compare(out.view(), reference(inputs, dim), kExact), "");
    }
  }
}

TEST(Cat, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(3);
  const Dims a_shape{4, 10};
  const Dims b_shape{4, 6};
  std::vector<TensorStorage> first;
  first.push_back(testing::random_tensor(a_shape, DataType::kFloat32, rng));
  first.push_back(testing::random_tensor(b_shape, DataType::kFloat32, rng));
  auto out = testing::poisoned({4, 16}, DataType::kFloat32);
  const Cat op(views(first), -1, out);
  for (int round = 0; round < 3; ++round) {
    std::vector<TensorStorage> inputs;
    inputs.push_back(testing::random_tensor(a_shape, DataType::kFloat32, rng));
    inputs.push_back(testing::random_tensor(b_shape, DataType::kFloat32, rng));
    auto y = testing::poisoned({4, 16}, DataType::kFloat32);
    op(views(inputs), y);
    EXPECT_EQ(testing::compare(y.view(), reference(inputs, -1), kExact), "");
  }
  const Tensor one[] = {first[0].view()};
  EXPECT_THROW(op(one, out), Error);
  const Tensor swapped[] = {first[1].view(), first[0].view()};
  EXPECT_THROW(op(swapped, out), Error);
}

TEST(Cat, RejectsBadInputs) {
  std::mt19937_64 rng(1);
  auto a = testing::random_tensor({4, 8}, DataType::kFloat32, rng);
  auto b = testing::random_tensor({4, 3}, DataType::kFloat32, rng);
  auto b_half = testing::random_tensor({4, 3}, DataType::kFloat16, rng);
  auto b_rows = testing::random_tensor({5, 3}, DataType::kFloat32, rng);
  auto b_rank3 = testing::random_tensor({4, 3, 1}, DataType::kFloat32, rng);
  auto out = testing::poisoned({4, 11}, DataType::kFloat32);
  auto half_out = testing::poisoned({4, 11}, DataType::kFloat16);
  auto short_out = testing::poisoned({4, 10}, DataType::kFloat32);
  const Tensor good[] = {a, b};
  expect_rejected(
      [&] {
        cat(std::vector<Tensor>{a, b_half}, 1, out);
      },
      out, "tensors[1]", ErrorKind::kInvalidType);
  expect_rejected([&] { cat(good, 1, half_out); }, half_out, "out", ErrorKind::kInvalidType);
  expect_rejected([&] { cat(std::vector<Tensor>{a, b_rows}, 1, out); }, out, "tensors[1]");
  expect_rejected([&] { cat(std::vector<Tensor>{a, b, b_rank3}, 1, out); }, out, "tensors[2]");
  expect_rejected([&] { cat(good, 1, short_out); }, short_out, "out");
  expect_rejected([&] { cat(good, 0, out); }, out, "tensors[1]");  // 8 != 3 off dim 0
  expect_rejected([&] { cat(good, 2, out); }, out, "dim");
  expect_rejected([&] { cat(good, -3, out); }, out, "dim");
  expect_rejected([&] { cat(std::span<const Tensor>{}, 0, out); }, out, "tensors");
  auto scalar = testing::random_tensor({}, DataType::kFloat32, rng);
  expect_rejected([&] { cat(std::vector<Tensor>{scalar}, 0, out); }, out, "tensors[0]");
  const Tensor broadcast_out = out.view().with_shape({4, 11}, {0, 1});
  expect_rejected([&] { cat(good, 1, broadcast_out); }, out, "out");
}

}  // namespace
}  // namespace tileops::ops
