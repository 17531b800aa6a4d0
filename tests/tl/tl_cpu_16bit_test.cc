// 16-bit float tiles on the cpu backend against the interpreter, bit for bit: tiles read in place,
// copied (a tail past the tensor's end reads the padding; a strided tensor; a tensor stored to
// while the tile is live), widened where they are read (a cast used twice, x * x), a loop-carried
// accumulator updated in place, and stores that narrow a value rounded just before.
#include <cstring>

#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

constexpr std::int64_t kTile = 8;

// Row r of y: y = round(3x) chunk by chunk, then the chunks are re-read from y (the tensor being
// stored to) and replaced by round(y + sum over chunks of x * x), all computed in float32.
tl::Kernel paths_kernel(const tl::Options& options) {
  return tl::jit(
      "paths_16bit",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::Int rows, tl::Int cols, tl::Int sx0,
         tl::Int sx1) {
        const tl::Value tx = tl::tensor(x, {rows, cols}, {sx0, sx1});
        const tl::Value ty = tl::tensor(y, {rows, cols});
        const DataType dtype = x.dtype(), f32 = DataType::kFloat32;
        const tl::Value chunks = tl::ceildiv(cols, kTile);
        for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
          tl::Var acc = tl::zeros({1, kTile}, f32);
          for (tl::Value c : tl::range(chunks)) {
            const tl::Value g = tl::load(tx, {1, kTile}, {r, c * kTile}).to(f32);
            acc = acc + g * g;
            const tl::Value f = tl::load(tx, {1, kTile}, {r, c * kTile}, 1.5).to(f32);
            tl::store((f * 3.0).to(dtype), ty, {r, c * kTile});
          }
          for (tl::Value c : tl::range(chunks)) {
            const tl::Value v = tl::load(ty, {1, kTile}, {r, c * kTile}).to(f32);
            tl::store((v + acc).to(dtype), ty, {r, c * kTile});
          }
        }
      },
      options);
}

void expect_same_bytes(const TensorStorage& a, const TensorStorage& b, const std::string& what) {
  ASSERT_EQ(a.bytes(), b.bytes());
  const auto* pa = static_cast<const unsigned char*>(a.data());
  const auto* pb = static_cast<const unsigned char*>(b.data());
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < a.bytes(); i += 2) {
    if (std::memcmp(pa + i, pb + i, 2) != 0 && differing++ == 0) first = i / 2;
  }
  EXPECT_EQ(differing, 0u) << what << ": first differing element " << first;
}

TEST(TlCpu16Bit, LoadsAndStoresAgreeWithTheInterpreter) {
  const tl::Kernel interp = paths_kernel(tl::Options{.backend = "interp"});
  const tl::Kernel cpu = paths_kernel(tl::Options{.backend = "cpu"});
  std::mt19937_64 rng(7);
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    for (std::int64_t col_stride : {1, 2}) {
      const std::int64_t rows = 5, cols = 21;  // the last chunk of a row is partly outside
      // x holds rows of cols * col_stride elements (every other one skipped when strided).
      const TensorStorage x = random_tensor({rows, cols * col_stride}, dtype, rng);
      const std::int64_t sx0 = cols * col_stride;
      TensorStorage y_interp = random_tensor({rows, cols}, dtype, rng);
      TensorStorage y_cpu({rows, cols}, dtype);
      std::memcpy(y_cpu.data(), y_interp.data(), y_interp.bytes());
      const std::string what =
          std::string(name_of(dtype)) + ", column stride " + std::to_string(col_stride);
      for (int cores : core_nums()) {
        interp.launch(cores, x, y_interp, rows, cols, sx0, col_stride);
        cpu.launch(cores, x, y_cpu, rows, cols, sx0, col_stride);
        expect_same_bytes(y_interp, y_cpu, what);
      }
    }
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
