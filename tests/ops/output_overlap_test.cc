// An output whose elements overlap each other (torch.empty(16).as_strided((4, 4), (1, 1))) is
// refused by every operator, naming the operator and the output, and nothing is written: the
// result would depend on the order of the writes. Zero (broadcast) strides are one such case;
// transposed, padded and sliced outputs are not.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

using testing::expect_rejected;
using testing::random_tensor;

constexpr DataType kF32 = DataType::kFloat32;

class OutputOverlap : public ::testing::Test {
 protected:
  // A view of `buffer_` (poisoned; no input lives there).
  Tensor out(const Dims& shape, const Dims& strides, DataType dtype = kF32) const {
    return Tensor(buffer_.data(), shape, strides, dtype);
  }
  Tensor out_at(std::int64_t offset, const Dims& shape) const {
    return Tensor(static_cast<float*>(buffer_.data()) + offset, shape, kF32);
  }
  // Rejected naming `arg` and "overlap" (or "broadcast"), with buffer_ untouched.
  template <typename Call>
  void refused(Call&& call, const std::string& arg, const std::string& detail = "overlap") {
    expect_rejected(std::forward<Call>(call), buffer_, arg, ErrorKind::kInvalidArgument, {detail});
  }
  std::mt19937_64 rng_{11};
  TensorStorage buffer_ = testing::poisoned({256}, kF32);
  TensorStorage x_ = random_tensor({4, 4}, kF32, rng_);
  TensorStorage y_ = random_tensor({4, 4}, kF32, rng_);
};

TEST_F(OutputOverlap, ElementwiseNormsAndSoftmaxes) {
  const Tensor diagonal = out({4, 4}, {1, 1});  // the as_strided((4, 4), (1, 1))
  const Tensor half_rows = out({4, 4}, {2, 1});
  const Tensor one_shared = out({2, 3}, {2, 1});  // only element (0, 2) meets (1, 0)
  refused([&] { ops::add(x_, y_, diagonal); }, "out");
  const Tensor x23 = x_.view().slice(0, 0, 2).slice(1, 0, 3);
  refused([&] { ops::add(x23, y_.view().slice(0, 0, 2).slice(1, 0, 3), one_shared); }, "out");
  refused([&] { ops::mul(x_, y_, half_rows); }, "out");
  refused([&] { ops::cast(x_, out({4, 4}, {1, 1}, DataType::kBFloat16)); }, "out");
  refused([&] { ops::swiglu(x_, y_, diagonal); }, "out");
  auto w = random_tensor({4}, kF32, rng_);
  refused([&] { ops::rms_norm(x_, w, 1e-6, half_rows); }, "out");
  refused(
      [&] {
        ops::add_rms_norm(x_, y_, w, 1e-6, out_at(128, {4, 4}), diagonal);
      },
      "residual_out");
  refused([&] { ops::scaled_softmax(x_, 0.5, diagonal); }, "out");
  refused([&] { ops::causal_softmax(x_, half_rows); }, "out");
  auto wide = random_tensor({4, 8}, kF32, rng_);
  refused([&] { ops::silu_and_mul(wide, -1, diagonal); }, "out");
  // Zero strides keep their own message.
  refused([&] { ops::add(x_, y_, out({4, 4}, {0, 1})); }, "out", "broadcast");
}

TEST_F(OutputOverlap, ProductsGathersAndTheClassForms) {
  const Tensor diagonal = out({4, 4}, {1, 1});
  refused([&] { ops::matmul(x_, y_, diagonal); }, "c");
  refused([&] { ops::gemm(x_, y_, 1.0, 1.0, false, true, out({4, 4}, {3, 1})); }, "c");
  refused([&] { ops::linear(x_, y_, Tensor(), diagonal); }, "out");
  auto ids = random_tensor({4}, DataType::kInt64, rng_, testing::Layout::kContiguous, 0, 4);
  refused([&] { ops::embedding(ids, y_, diagonal); }, "out");
  const std::vector<Tensor> parts = {x_.view().slice(0, 0, 2), y_.view().slice(0, 0, 2)};
  refused([&] { ops::cat(parts, 0, diagonal); }, "out");
  // The class forms validate their geometry once, at construction.
  refused([&] { const ops::Add add(x_, y_, diagonal); }, "out");
  refused([&] { const ops::Matmul matmul(x_, y_, diagonal); }, "c");
}

TEST_F(OutputOverlap, InPlaceArgumentsAndCaches) {
  // Rotary in place: query [T, H·D] = [2, 8] whose rows overlap by half.
  auto positions = random_tensor({2}, DataType::kInt64, rng_, testing::Layout::kContiguous, 0, 4);
  auto cos_sin = random_tensor({4, 8}, kF32, rng_);
  refused(
      [&] {
        ops::rotary_embedding(positions, out({2, 8}, {4, 1}), Tensor(), 8, cos_sin, true);
      },
      "query");
  // reshape_and_cache: a key cache [blocks, block_size, Hkv, D] whose slots overlap.
  auto key = random_tensor({2, 1, 4}, kF32, rng_);
  auto value = random_tensor({2, 1, 4}, kF32, rng_);
  auto value_cache = testing::poisoned({2, 2, 1, 4}, kF32);
  auto slots = random_tensor({2}, DataType::kInt64, rng_, testing::Layout::kContiguous, 0, 1);
  testing::from_doubles(slots, {0, 1});
  refused(
      [&] {
        ops::reshape_and_cache(key, value, out({2, 2, 1, 4}, {8, 2, 4, 1}), value_cache, slots);
      },
      "key_cache");
  // The sampler's token output [rows]: rank 1 overlaps only by broadcasting.
  auto logits = random_tensor({4, 16}, kF32, rng_);
  refused(
      [&] {
        ops::top_k_top_p_sampler(logits, Tensor(), Tensor(), 1, out({4}, {0}, DataType::kInt64));
      },
      "out", "broadcast");
}

// Legitimate layouts still pass: transposed, padded rows, every other column, and size-1 dims
// with any stride.
TEST_F(OutputOverlap, DistinctLayoutsAreAccepted) {
  const std::vector<double> xs = testing::to_doubles(x_), ys = testing::to_doubles(y_);
  std::vector<double> sum(16);
  for (int i = 0; i < 16; ++i) sum[i] = static_cast<double>(static_cast<float>(xs[i] + ys[i]));
  for (const auto& [shape, strides] : std::vector<std::pair<Dims, Dims>>{{{4, 4}, {1, 4}},
                                                                         {{4, 4}, {6, 1}},
                                                                         {{4, 4}, {9, 2}},
                                                                         {{4, 1, 4}, {4, 0, 1}},
                                                                         {{2, 2, 4}, {4, 8, 1}},
                                                                         {{4, 4}, {4, 17}}}) {
    SCOPED_TRACE(shape.to_string() + " " + strides.to_string());
    const Tensor o = out(shape, strides);
    ops::add(x_.view().with_shape(shape, contiguous_strides(shape)),
             y_.view().with_shape(shape, contiguous_strides(shape)), o);
    EXPECT_EQ(testing::to_doubles(o), sum);
  }
}

}  // namespace
}  // namespace tileops
