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

}  // namespace
}  // namespace tileops
