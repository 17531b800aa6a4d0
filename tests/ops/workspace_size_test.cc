// Scratch sizes formed from hostile extents are an InvalidArgument naming the operator, never a
// wrapped byte count: a broadcast input (stride 0) reaches 2^60 elements with no memory behind
// it, and the float32 rows an operator stages per thread then exceed int64 bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "src/ops/cpu/simd/gemm_kernels.h"
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

// matmul over a broadcast K as large as 17 rows of bfloat16 allow (a and b of stride 0, c real,
// 17 rows: no decode path): the packed panel of B, K × one strip of gemm_nr() floats, exceeds
// int64 bytes for strips of 9 floats or more, which every SIMD target packs (12 on SSE4 and NEON,
// 24 on AVX2, 48 on AVX-512). Highway's scalar target packs strips of 3: its panel fits int64,
// and the workspace pool refuses to allocate it.
TEST(WorkspaceSize, BroadcastInnerDimensionOfAProduct) {
  constexpr DataType kBf16 = DataType::kBFloat16;
  auto arena = testing::poisoned({17 * 16 + 64}, kBf16);
  auto* base = static_cast<std::uint16_t*>(arena.data());
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::int64_t k = kMax / (17 * 2);  // a's bytes just fit int64
  const Tensor a(base, Dims{17, k}, Dims{0, 0}, kBf16);
  const Tensor b(base + 1, Dims{k, 16}, Dims{0, 0}, kBf16);
  const Tensor c(base + 64, Dims{17, 16}, kBf16);
  if (ops::cpu::gemm_nr() > kMax / 4 / k) {
    expect_rejected([&] { ops::matmul(a, b, c); }, arena, "a", ErrorKind::kInvalidArgument,
                    {"overflows int64"});
    return;
  }
  const auto before = testing::snapshot(arena);
  try {
    ops::matmul(a, b, c);
    ADD_FAILURE() << "no error for a panel of K x " << ops::cpu::gemm_nr() << " floats";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot allocate"), std::string::npos) << e.what();
  }
  EXPECT_EQ(testing::snapshot(arena), before) << "output written despite the error";
}

}  // namespace
}  // namespace tileops
