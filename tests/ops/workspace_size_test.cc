// Scratch sizes formed from hostile extents are an InvalidArgument naming the operator, never a
// wrapped byte count: a broadcast input (stride 0) reaches 2^60 elements with no memory behind
// it, and the float32 rows an operator stages per thread then exceed int64 bytes.
#include <gtest/gtest.h>

#include <cstdint>

#include "src/ops/framework/workspace_bytes.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops {
namespace {

using testing::expect_rejected;

constexpr DataType kF32 = DataType::kFloat32;
constexpr std::int64_t kWide = std::int64_t{1} << 60;

TEST(WorkspaceSize, SumsOfProductsAreChecked) {
  EXPECT_EQ(ops::workspace_bytes({{2, 3}, {4}, {kWide, 0}}, 4, "probe"), 40u);
  EXPECT_THROW(ops::workspace_bytes({{kWide, 16}}, 1, "probe"), Error);
  EXPECT_THROW(
      ops::workspace_bytes({{kWide}, {kWide}, {kWide}, {kWide}, {kWide}, {kWide}, {kWide}, {kWide}},
                           1, "probe"),
      Error);
  try {
    ops::workspace_bytes({{kWide, 2}}, 4, "rms_norm: argument 'input': its workspace");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_STREQ(e.what(),
                 "rms_norm: argument 'input': its workspace: 2305843009213693952 elements of 4 "
                 "bytes overflows int64");
  }
}

// Rows of 2^60 broadcast elements: input and weight lie below the (unbacked) output in one
// arena, so that no overlap check fires first; the error comes before anything is written.
TEST(WorkspaceSize, BroadcastRowsBeyondInt64AreRefused) {
  auto arena = testing::poisoned({64}, kF32);
  auto* base = static_cast<float*>(arena.data());
  const Tensor input(base, Dims{1, kWide}, Dims{0, 0}, kF32);
  const Tensor weight(base + 1, Dims{kWide}, Dims{0}, kF32);
  const Tensor out(base + 32, Dims{1, kWide}, kF32);
  expect_rejected([&] { ops::rms_norm(input, weight, 1e-6, out); }, arena, "input",
                  ErrorKind::kInvalidArgument, {"rms_norm", "overflows int64"});
  expect_rejected([&] { ops::scaled_softmax(input, 1.0, out); }, arena, "input",
                  ErrorKind::kInvalidArgument, {"softmax", "overflows int64"});
}

// matmul over a broadcast K of 2^57 (a and b bfloat16 of stride 0, c real, 17 rows: no decode
// path): the packed panel of B (K × at least 16 floats) exceeds int64 bytes.
TEST(WorkspaceSize, BroadcastInnerDimensionOfAProduct) {
  constexpr DataType kBf16 = DataType::kBFloat16;
  auto arena = testing::poisoned({17 * 16 + 64}, kBf16);
  auto* base = static_cast<std::uint16_t*>(arena.data());
  const std::int64_t k = std::int64_t{1} << 57;
  const Tensor a(base, Dims{17, k}, Dims{0, 0}, kBf16);
  const Tensor b(base + 1, Dims{k, 16}, Dims{0, 0}, kBf16);
  const Tensor c(base + 64, Dims{17, 16}, kBf16);
  expect_rejected([&] { ops::matmul(a, b, c); }, arena, "a", ErrorKind::kInvalidArgument,
                  {"overflows int64"});
}

}  // namespace
}  // namespace tileops
