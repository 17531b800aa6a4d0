// Outputs may share memory with an input only as exactly the same view (in-place use, where the
// operator allows it); any other overlap is an error naming the output and what it overlaps, and
// nothing is written. The in-place forms themselves are tested with each operator.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

using testing::expect_rejected;
using testing::random_tensor;

// Views into one float32 buffer of 4096 elements.
class Aliasing : public ::testing::Test {
 protected:
  Tensor at(std::int64_t offset, const Dims& shape, DataType dtype = DataType::kFloat32) const {
    return Tensor(static_cast<char*>(buffer_.data()) + offset * 4, shape, contiguous_strides(shape),
                  dtype);
  }
  std::mt19937_64 rng_{5};
  TensorStorage buffer_ = random_tensor({4096}, DataType::kFloat32, rng_);
  TensorStorage other_ = random_tensor({4, 64}, DataType::kFloat32, rng_);
};

TEST_F(Aliasing, ElementwiseOutputShiftedOverAnInput) {
  const Tensor x = at(0, {4, 64});
  const Tensor shifted = at(1, {4, 64});
  expect_rejected([&] { ops::add(x, other_, shifted); }, buffer_, "out",
                  ErrorKind::kInvalidArgument, {"'input'"});
  expect_rejected([&] { ops::mul(other_, x, shifted); }, buffer_, "out",
                  ErrorKind::kInvalidArgument, {"'other'"});
  expect_rejected([&] { ops::swiglu(other_, x, shifted); }, buffer_, "out",
                  ErrorKind::kInvalidArgument, {"'gate'"});
  expect_rejected([&] { ops::cast(x, shifted); }, buffer_, "out");
  expect_rejected([&] { ops::scaled_softmax(x, 1.0, shifted); }, buffer_, "out");
  expect_rejected([&] { ops::causal_softmax(x, shifted); }, buffer_, "out");
  expect_rejected(
      [&] {
        ops::silu_and_mul(at(0, {4, 128}), -1, at(500, {4, 64}));
      },
      buffer_, "out");
}

// Column slices of one fused buffer ([4, 192] here, like q/k/v of a fused qkv projection) share
// an extent but no element: they are separate tensors. Slices that share columns are not.
TEST_F(Aliasing, InterleavedColumnSlicesOfOneBufferAreApart) {
  const Tensor fused(buffer_.data(), {4, 3, 64}, {192, 64, 1}, DataType::kFloat32);
  const Tensor q = fused.slice(1, 0, 1), k = fused.slice(1, 1, 1), v = fused.slice(1, 2, 1);
  const std::vector<double> q_before = testing::to_doubles(q), k_before = testing::to_doubles(k);
  ops::add(q, k, v);
  const std::vector<double> sum = testing::to_doubles(v);
  for (std::size_t i = 0; i < sum.size(); ++i) {
    ASSERT_EQ(sum[i], static_cast<double>(static_cast<float>(q_before[i] + k_before[i]))) << i;
  }
  const Tensor flat(buffer_.data(), {4, 192}, {192, 1}, DataType::kFloat32);
  expect_rejected([&] { ops::add(flat.slice(1, 0, 64), other_, flat.slice(1, 32, 64)); }, buffer_,
                  "out", ErrorKind::kInvalidArgument, {"'input'"});
  // Output row r covers bytes of input row r (element 192·r + 32 onwards): same stride, offset.
  const Tensor input(buffer_.data(), {3, 64}, {192, 1}, DataType::kFloat32);
  const Tensor shifted(static_cast<float*>(buffer_.data()) + 160, {3, 64}, {192, 1},
                       DataType::kFloat32);
  expect_rejected([&] { ops::add(input, other_.view().slice(0, 0, 3), shifted); }, buffer_, "out",
                  ErrorKind::kInvalidArgument, {"'input'"});
}

TEST_F(Aliasing, BroadcastInputUnderTheOutput) {
  // out covers the row that is broadcast over it: writing row 0 would change later rows' input.
  const Tensor row = at(64, {64});
  expect_rejected(
      [&] {
        ops::add(other_, row, at(0, {4, 64}));
      },
      buffer_, "out", ErrorKind::kInvalidArgument, {"'other'"});
}

TEST_F(Aliasing, NormsMustNotWriteOverWeightsOrEachOther) {
  const Tensor x = at(0, {4, 64});
  const Tensor w = at(300, {64});
  expect_rejected(
      [&] {
        ops::rms_norm(x, w, 1e-6, at(256, {4, 64}));
      },
      buffer_, "out", ErrorKind::kInvalidArgument, {"'weight'"});
  expect_rejected(
      [&] {
        ops::add_rms_norm(x, other_, at(1000, {64}), 1e-6, at(2000, {4, 64}), at(2100, {4, 64}));
      },
      buffer_, "residual_out", ErrorKind::kInvalidArgument, {"'out'"});
  // The in-place form writes into input and residual, which then must not overlap.
  expect_rejected(
      [&] {
        ops::add_rms_norm_inplace(x, at(32, {4, 64}), at(1000, {64}), 1e-6);
      },
      buffer_, "residual");
}

TEST_F(Aliasing, GathersAndConcatenationNeverRunInPlace) {
  const Tensor weight = at(0, {8, 64});
  const TensorStorage ids =
      random_tensor({8}, DataType::kInt32, rng_, testing::Layout::kContiguous, 0, 8);
  expect_rejected([&] { ops::embedding(ids, weight, weight); }, buffer_, "out",
                  ErrorKind::kInvalidArgument, {"'weight'"});
  const std::vector<Tensor> parts = {at(0, {2, 64}), at(128, {2, 64})};
  expect_rejected(
      [&] {
        ops::cat(parts, 0, at(100, {4, 64}));
      },
      buffer_, "out", ErrorKind::kInvalidArgument, {"'tensors[0]'"});
}

TEST_F(Aliasing, ProductsNeverRunInPlace) {
  const Tensor a = at(0, {8, 8});
  const Tensor b = at(64, {8, 8});
  expect_rejected([&] { ops::gemm(a, b, 1.0, 0.0, false, false, a); }, buffer_, "c",
                  ErrorKind::kInvalidArgument, {"'a'"});
  expect_rejected(
      [&] {
        ops::matmul(a, b, at(100, {8, 8}));
      },
      buffer_, "c", ErrorKind::kInvalidArgument, {"'b'"});
  expect_rejected(
      [&] {
        ops::linear(a, b, at(200, {8}), at(196, {8, 8}));
      },
      buffer_, "out", ErrorKind::kInvalidArgument, {"'bias'"});
  TensorStorage c = random_tensor({8, 8}, DataType::kFloat32, rng_);
  const ops::Gemm gemm(a, b, 1.0, 0.0, false, false, c);
  expect_rejected([&] { gemm(a, b, at(32, {8, 8})); }, buffer_, "c");
}

TEST_F(Aliasing, ClassFormsCheckEveryCall) {
  TensorStorage weight = random_tensor({64}, DataType::kFloat32, rng_);
  TensorStorage out = random_tensor({4, 64}, DataType::kFloat32, rng_);
  const ops::RmsNorm norm(at(0, {4, 64}), weight, 1e-6, out);
  norm(at(0, {4, 64}), weight, at(0, {4, 64}));  // exactly in place: allowed
  expect_rejected(
      [&] {
        norm(at(0, {4, 64}), weight, at(3, {4, 64}));
      },
      buffer_, "out", ErrorKind::kInvalidArgument, {"'input'"});
  const ops::Add add(at(0, {4, 64}), other_, out);
  expect_rejected([&] { add(at(0, {4, 64}), other_, at(64, {4, 64})); }, buffer_, "out");
}

}  // namespace
}  // namespace tileops
