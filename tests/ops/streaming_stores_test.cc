// Outputs beyond the last-level cache are written with streaming stores (src/ops/cpu/streaming.h).
// Each operator that streams runs once on a tensor large enough to stream and must give, bit for
// bit, what it gives on row blocks small enough not to stream — a path the per-operator tests
// check against float64 references. Outputs start poisoned (NaN), so a lost store fails.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "src/ops/cpu/streaming.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

using testing::Layout;
using testing::poisoned;
using testing::random_tensor;

using RunFn = std::function<void(const Tensor& x, const Tensor& other, const Tensor& out)>;

// A threshold of 1 MiB instead of most of the last-level cache, for speed.
class SmallStreamThreshold {
 public:
  SmallStreamThreshold() : previous_(ops::cpu::set_stream_threshold(1 << 20)) {}
  ~SmallStreamThreshold() { ops::cpu::set_stream_threshold(previous_); }
  SmallStreamThreshold(const SmallStreamThreshold&) = delete;
  SmallStreamThreshold& operator=(const SmallStreamThreshold&) = delete;

 private:
  std::int64_t previous_;
};

// Outputs [rows, 4096] of dtype, rows chosen so that they stream; x is [rows, 4096·x_widths]
// (silu_and_mul reads twice the width it writes), other is [rows, 4096].
void expect_streaming_matches_blocks(DataType dtype, std::int64_t x_widths, const RunFn& run) {
  const SmallStreamThreshold small;
  const std::int64_t cols = 4096;
  const std::int64_t x_cols = cols * x_widths;
  const std::int64_t row_bytes = cols * static_cast<std::int64_t>(size_of(dtype));
  std::int64_t rows = 64;
  while (!ops::cpu::stream_stores(rows * row_bytes)) rows *= 2;
  std::mt19937_64 rng(7);
  TensorStorage x = random_tensor({rows, x_cols}, dtype, rng, Layout::kContiguous, -4.0, 4.0);
  TensorStorage other = random_tensor({rows, cols}, dtype, rng, Layout::kContiguous, -4.0, 4.0);
  TensorStorage whole = poisoned({rows, cols}, dtype);
  run(x, other, whole);
  // Blocks of rows at the start, the middle and the end.
  constexpr std::int64_t kBlock = 8;  // even add_rms_norm's four operands stay under 1 MiB
  ASSERT_FALSE(ops::cpu::stream_stores(4 * kBlock * row_bytes));
  for (const std::int64_t begin : {std::int64_t{0}, rows / 2, rows - kBlock}) {
    TensorStorage block = poisoned({kBlock, cols}, dtype);
    const Tensor out_rows = whole.view().slice(0, begin, kBlock);
    run(x.view().slice(0, begin, kBlock), other.view().slice(0, begin, kBlock), block);
    ASSERT_EQ(std::memcmp(block.data(), out_rows.data(), block.bytes()), 0)
        << name_of(dtype) << ": rows " << begin << ".." << begin + kBlock;
  }
}

class StreamingStores : public ::testing::TestWithParam<DataType> {};

TEST_P(StreamingStores, Swiglu) {
  expect_streaming_matches_blocks(GetParam(), 1,
                                  [](auto& x, auto& g, auto& out) { ops::swiglu(x, g, out); });
}

TEST_P(StreamingStores, SiluAndMul) {
  expect_streaming_matches_blocks(GetParam(), 2,
                                  [](auto& x, auto&, auto& out) { ops::silu_and_mul(x, -1, out); });
}

TEST_P(StreamingStores, Add) {
  expect_streaming_matches_blocks(GetParam(), 1,
                                  [](auto& x, auto& y, auto& out) { ops::add(x, y, out); });
}

TEST_P(StreamingStores, RmsNorm) {
  std::mt19937_64 rng(3);
  TensorStorage weight = random_tensor({4096}, GetParam(), rng, Layout::kContiguous, 0.5, 1.5);
  expect_streaming_matches_blocks(
      GetParam(), 1, [&](auto& x, auto&, auto& out) { ops::rms_norm(x, weight, 1e-6, out); });
}

TEST_P(StreamingStores, AddRmsNorm) {
  std::mt19937_64 rng(4);
  TensorStorage weight = random_tensor({4096}, GetParam(), rng, Layout::kContiguous, 0.5, 1.5);
  expect_streaming_matches_blocks(GetParam(), 1, [&](auto& x, auto& r, auto& out) {
    TensorStorage residual_out = poisoned(r.shape(), r.dtype());
    ops::add_rms_norm(x, r, weight, 1e-6, out, residual_out);
  });
}

TEST_P(StreamingStores, ScaledSoftmax) {
  expect_streaming_matches_blocks(
      GetParam(), 1, [](auto& x, auto&, auto& out) { ops::scaled_softmax(x, 0.7, out); });
}

// [rows, T] viewed as [rows / 8, 8, T]: blocks of 8 rows are whole batch entries.
TEST_P(StreamingStores, CausalSoftmax) {
  const auto batched = [](const Tensor& t) {
    const std::int64_t rows = t.shape()[0];
    const std::int64_t cols = t.shape()[1];
    return Tensor(t.data(), {rows / 8, 8, cols}, {8 * t.stride(0), t.stride(0), t.stride(1)},
                  t.dtype());
  };
  expect_streaming_matches_blocks(GetParam(), 1, [&](auto& x, auto&, auto& out) {
    ops::causal_softmax(batched(x), batched(out));
  });
}

// Every offset and length around the 16-byte streaming granule: zeros exactly [offset, +n).
TEST(ZeroBytes, StreamingAndPlainZeroExactlyTheRange) {
  for (const bool stream : {false, true}) {
    for (std::size_t offset = 0; offset < 20; ++offset) {
      for (std::size_t n = 0; n < 80; ++n) {
        std::vector<unsigned char> buffer(128, 0xAB);
        ops::cpu::zero_bytes(buffer.data() + offset, n, stream);
        for (std::size_t i = 0; i < buffer.size(); ++i) {
          const bool inside = i >= offset && i < offset + n;
          ASSERT_EQ(buffer[i], inside ? 0 : 0xAB)
              << "offset " << offset << ", n " << n << ", i " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, StreamingStores,
                         ::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                           DataType::kBFloat16),
                         [](const auto& info) { return std::string(name_of(info.param)); });

}  // namespace
}  // namespace tileops
