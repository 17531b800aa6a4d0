// embedding against a float64 reference: int32/int64 ids of several ranks, every row-width
// tail, strided ids/weight/out, several weight dtypes, the class form and bad inputs (including
// out-of-range ids, which must leave out untouched). Rows are copied, so results are exact.
#include "tileops/ops/embedding.h"

#include <gtest/gtest.h>

#include <cstring>
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

std::vector<double> reference(const Tensor& ids, const Tensor& weight) {
  const std::vector<double> id_values = testing::to_doubles(ids);
  const std::vector<double> w = testing::to_doubles(weight);
  const std::int64_t width = weight.size(1);
  std::vector<double> out;
  for (double id : id_values) {
    const auto row = static_cast<std::int64_t>(id);
    out.insert(out.end(), w.begin() + row * width, w.begin() + (row + 1) * width);
  }
  return out;
}

Dims out_shape(const Dims& ids_shape, std::int64_t width) {
  Dims shape = ids_shape;
  shape.push_back(width);
  return shape;
}

using Param = std::tuple<DataType, DataType, std::int64_t, Layout>;

class EmbeddingTest : public ::testing::TestWithParam<Param> {};

TEST_P(EmbeddingTest, MatchesFloat64Reference) {
  const auto [dtype, id_dtype, width, layout] = GetParam();
  std::mt19937_64 rng(42);
  constexpr std::int64_t kVocab = 50;
  auto weight = testing::random_tensor({kVocab, width}, dtype, rng, layout);
  for (const Dims& ids_shape : {Dims{3, 5}, Dims{7}, Dims{}}) {
    auto ids = testing::random_tensor(ids_shape, id_dtype, rng, layout, 0.0, kVocab);
    auto out = testing::poisoned(out_shape(ids_shape, width), dtype, layout);
    embedding(ids, weight, out);
    EXPECT_EQ(testing::compare(out.view(), reference(ids, weight), kExact), "")
        << "ids shape " << ids_shape.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(
    DtypesTailsLayouts, EmbeddingTest,
    ::testing::Combine(::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                         DataType::kBFloat16, DataType::kInt32,
                                         DataType::kFloat8E4M3FN),
                       ::testing::Values(DataType::kInt32, DataType::kInt64),
                       ::testing::Values(1, 7, 33, 4097),
                       ::testing::Values(Layout::kContiguous, Layout::kStrided)));

TEST(Embedding, EdgeIdsTransposedWeightAndEmptyIds) {
  std::mt19937_64 rng(4);
  auto storage = testing::random_tensor({16, 10}, DataType::kBFloat16, rng);
  const Tensor weight = storage.view().transpose(0, 1);  // [10, 16], strides [1, 10]
  auto ids = testing::poisoned({4}, DataType::kInt64);
  testing::from_doubles(ids, {0, 9, 9, 0});
  auto out = testing::poisoned({4, 16}, DataType::kBFloat16);
  embedding(ids, weight, out);
  EXPECT_EQ(testing::compare(out.view(), reference(ids, weight), kExact), "");

  auto no_ids = testing::poisoned({2, 0}, DataType::kInt32);
  auto empty_out = testing::poisoned({2, 0, 16}, DataType::kBFloat16);
  EXPECT_NO_THROW(embedding(no_ids, weight, empty_out));
}

TEST(Embedding, LargeLookupAcrossThreads) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  std::mt19937_64 rng(9);
  auto weight = testing::random_tensor({1000, 256}, DataType::kFloat32, rng);
  auto ids = testing::random_tensor({40000}, DataType::kInt32, rng, Layout::kContiguous, 0, 1000);
  auto out = testing::poisoned({40000, 256}, DataType::kFloat32);
  embedding(ids, weight, out, ctx);
  EXPECT_EQ(testing::compare(out.view(), reference(ids, weight), kExact), "");

  // Bad ids in both halves of the range check: the first one is reported, nothing written.
  ids.view().data_as<std::int32_t>()[30000] = 1000;
  ids.view().data_as<std::int32_t>()[5000] = -7;
  out.fill_bytes(0xFF);
  expect_rejected([&] { embedding(ids, weight, out, ctx); }, out, "input_ids",
                  ErrorKind::kInvalidArgument, {"id -7", "[5000]"});
}

TEST(Embedding, CachedInstanceIsCorrectOnNewData) {
  std::mt19937_64 rng(3);
  auto weight = testing::random_tensor({20, 12}, DataType::kFloat16, rng);
  auto ids = testing::random_tensor({2, 3}, DataType::kInt64, rng, Layout::kContiguous, 0, 20);
  auto out = testing::poisoned({2, 3, 12}, DataType::kFloat16);
  const Embedding op(ids, weight, out);
  for (int round = 0; round < 3; ++round) {
    auto w = testing::random_tensor({20, 12}, DataType::kFloat16, rng);
    auto i = testing::random_tensor({2, 3}, DataType::kInt64, rng, Layout::kContiguous, 0, 20);
    auto y = testing::poisoned({2, 3, 12}, DataType::kFloat16);
    op(i, w, y);
    EXPECT_EQ(testing::compare(y.view(), reference(i, w), kExact), "");
  }
  auto other = testing::poisoned({3, 2}, DataType::kInt64);
  EXPECT_THROW(op(other, weight, out), Error);
}

TEST(Embedding, RejectsOutOfRangeIdsBeforeWriting) {
  std::mt19937_64 rng(1);
  auto weight = testing::random_tensor({10, 8}, DataType::kFloat32, rng);
  for (DataType id_dtype : {DataType::kInt32, DataType::kInt64}) {
    for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
      auto ids = testing::random_tensor({3, 4}, id_dtype, rng, layout, 0, 10);
      auto out = testing::poisoned({3, 4, 8}, DataType::kFloat32, layout);
      // The bad id comes last, after ids whose rows would already have been copied.
      std::vector<double> values = testing::to_doubles(ids);
      values.back() = 10;
      testing::from_doubles(ids, values);
      expect_rejected([&] { embedding(ids, weight, out); }, out, "input_ids",
                      ErrorKind::kInvalidArgument, {"id 10", "[2, 3]", "[0, 10)"});
      values.back() = 3;
      values[5] = -1;
      testing::from_doubles(ids, values);
      expect_rejected([&] { embedding(ids, weight, out); }, out, "input_ids",
                      ErrorKind::kInvalidArgument, {"id -1", "[1, 1]"});
    }
  }
  // Past 32 bits: an int64 id that would wrap to a valid int32 is still out of range.
  auto big = testing::poisoned({1}, DataType::kInt64);
  testing::from_doubles(big, {4294967296.0 + 2});
  auto out = testing::poisoned({1, 8}, DataType::kFloat32);
  expect_rejected([&] { embedding(big, weight, out); }, out, "input_ids");
}

TEST(Embedding, RejectsBadInputs) {
  std::mt19937_64 rng(2);
  auto weight = testing::random_tensor({10, 8}, DataType::kFloat32, rng);
  auto weight_1d = testing::random_tensor({80}, DataType::kFloat32, rng);
  auto ids = testing::random_tensor({5}, DataType::kInt64, rng, Layout::kContiguous, 0, 10);
  auto float_ids = testing::random_tensor({5}, DataType::kFloat32, rng, Layout::kContiguous, 0, 10);
  auto out = testing::poisoned({5, 8}, DataType::kFloat32);
  auto half_out = testing::poisoned({5, 8}, DataType::kFloat16);
  auto wide_out = testing::poisoned({5, 9}, DataType::kFloat32);
  auto flat_out = testing::poisoned({40}, DataType::kFloat32);
  expect_rejected([&] { embedding(float_ids, weight, out); }, out, "input_ids",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { embedding(ids, weight, half_out); }, half_out, "out",
                  ErrorKind::kInvalidType);
  expect_rejected([&] { embedding(ids, weight_1d, out); }, out, "weight");
  expect_rejected([&] { embedding(ids, weight, wide_out); }, wide_out, "out");
  expect_rejected([&] { embedding(ids, weight, flat_out); }, flat_out, "out");
  auto empty_vocab = testing::poisoned({0, 8}, DataType::kFloat32);
  expect_rejected([&] { embedding(ids, empty_vocab, out); }, out, "input_ids");
}

// Rows are copied bit for bit: NaN (either sign, quiet and signalling payloads) and ±inf too,
// every float dtype, contiguous and strided.
TEST(Embedding, NonFiniteRowsCopiedExactly) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " " << testing::layout_name(layout));
      std::mt19937_64 rng(8);
      constexpr std::int64_t kVocab = 6, kWidth = 37;
      auto weight = testing::random_nonfinite_tensor({kVocab, kWidth}, dtype, rng, layout, 3);
      // A signalling NaN with a payload (a float32 load and store would keep it; arithmetic not).
      const std::uint32_t snan = dtype == DataType::kFloat32   ? 0x7f800123u
                                 : dtype == DataType::kFloat16 ? 0x7c05u
                                                               : 0x7f81u;
      std::memcpy(weight.view().element_ptr(std::vector<std::int64_t>{2, 5}.data()), &snan,
                  size_of(dtype));
      auto ids = testing::poisoned({9}, DataType::kInt64);
      testing::from_doubles(ids, {2, 0, 5, 2, 1, 3, 4, 2, 0});
      auto out = testing::poisoned({9, kWidth}, dtype, layout);
      embedding(ids, weight, out);
      const std::vector<std::uint64_t> w = testing::element_bits(weight.view());
      const std::vector<std::uint64_t> got = testing::element_bits(out.view());
      for (std::int64_t t = 0; t < 9; ++t) {
        const auto row = static_cast<std::int64_t>(testing::to_doubles(ids.view())[t]);
        for (std::int64_t c = 0; c < kWidth; ++c) {
          EXPECT_EQ(got[t * kWidth + c], w[row * kWidth + c]) << "token " << t << " column " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tileops::ops
