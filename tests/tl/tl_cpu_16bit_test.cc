// 16-bit float tiles on the cpu backend against the interpreter, bit for bit: tiles read in place
// (also from the tensor they are stored back to, an in-place update), copied (a tail past the
// tensor's end reads the padding; a strided tensor), widened where they are read (in blocks of 64
// in the vector loops) (a cast used twice, x * x), a loop-carried
// accumulator updated in place, and stores that narrow a value rounded just before; float32 rows
// of every kind of value (subnormals, NaN, infinities, halfway cases) narrowed to bfloat16 as
// they are stored.
#include <cmath>
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

// Stored 64 elements at a time, with one conversion instruction per 16 where the CPU has
// AVX512-BF16, which reads float32 subnormals as zero: such blocks take the exact path.
void narrowing_stores_agree(bool materialised);

// With `materialised`, the rounded tile is also squared and summed (s), so it is computed into a
// float32 tile of its own first (a flat loop ending in the rounding, 64 values at a time).
TEST(TlCpu16Bit, NarrowingStoresAgreeWithTheInterpreterOnEveryKindOfValue) {
  for (const bool materialised : {false, true}) {
    SCOPED_TRACE(materialised ? "materialised" : "stored");
    narrowing_stores_agree(materialised);
  }
}

void narrowing_stores_agree(bool materialised) {
  constexpr std::int64_t kWidth = 150;  // two blocks of 64 and a tail
  const auto make = [materialised](const char* backend) {
    return tl::jit(
        materialised ? "narrow_bf16_twice" : "narrow_bf16",
        [materialised](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress s,
                       tl::Int rows) {
          const tl::Value tx = tl::tensor(x, {rows, kWidth});
          const tl::Value ty = tl::tensor(y, {rows, kWidth});
          const tl::Value r = tl::block_idx();
          const tl::Value v = tl::load(tx, {1, kWidth}, {r, 0}).to(DataType::kBFloat16);
          tl::store(v, ty, {r, 0});
          if (materialised) {
            const tl::Value w = v.to(DataType::kFloat32);
            tl::store(tl::reduce_sum(w * w, {1}, true), tl::tensor(s, {rows, 1}), {r, 0});
          }
        },
        tl::Options{.backend = backend});
  };
  const std::int64_t rows = 64;
  std::mt19937_64 rng(11);
  TensorStorage x({rows, kWidth}, DataType::kFloat32);
  auto* bits = static_cast<std::uint32_t*>(x.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < kWidth; ++j) {
      std::uint32_t b = static_cast<std::uint32_t>(rng());
      if (j < 64 || r % 2 == 0) {
        // The first block, and every block of even rows, without subnormals: exponents 1..255
        // (inf and NaN included), a third of them just at a bfloat16 halfway point.
        if ((b & 0x7F800000u) == 0) b |= 0x00800000u;
        if (j % 3 == 0) b = (b & 0xFFFF0000u) | 0x8000u;
      } else if (j % 5 == 0) {
        b &= 0x807FFFFFu;  // subnormal (or zero)
      }
      bits[r * kWidth + j] = b;
    }
  }
  TensorStorage y_interp = poisoned({rows, kWidth}, DataType::kBFloat16);
  TensorStorage y_cpu = poisoned({rows, kWidth}, DataType::kBFloat16);
  TensorStorage s = poisoned({rows, 1}, DataType::kFloat32);  // written, not compared
  make("interp").launch(rows, x, y_interp, s, rows);
  make("cpu").launch(rows, x, y_cpu, s, rows);
  // NaN payloads are not guaranteed (docs/dtypes.md): a NaN of the same sign counts as equal.
  const auto* pi = static_cast<const std::uint16_t*>(y_interp.data());
  const auto* pc = static_cast<const std::uint16_t*>(y_cpu.data());
  const auto is_nan = [](std::uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0; };
  std::int64_t differing = 0, nans = 0, subnormals = 0;
  for (std::int64_t i = 0; i < rows * kWidth; ++i) {
    const bool nan = is_nan(pi[i]) && is_nan(pc[i]) && (pi[i] >> 15) == (pc[i] >> 15);
    nans += nan;
    subnormals += (bits[i] & 0x7F800000u) == 0 && (bits[i] & 0x7FFFFFu) != 0;
    if (pi[i] != pc[i] && !nan && differing++ == 0) {
      ADD_FAILURE() << "element " << i << " (float32 bits " << std::hex << bits[i] << "): interp "
                    << pi[i] << ", cpu " << pc[i];
    }
  }
  EXPECT_EQ(differing, 0);
  EXPECT_GT(nans, 0);  // the input has each kind of value
  EXPECT_GT(subnormals, 0);
}

// 16-bit tiles read 64 lanes at a time in fused loops are widened in blocks (tl_widen64): every
// bfloat16 and float16 bit pattern, rows of 1061 (16 blocks and a tail), through a narrowing store
// (y = round(2x)) and a row sum of squares (s, float32), against the interpreter: y bit for bit
// (a NaN of the same sign counts as equal), s within 4 float32 roundings of its sum. That both
// loops read the tile in blocks is the plan's (tl_cpu_plan_test.cc).
TEST(TlCpu16Bit, BlockWideningAgreesOnEveryValue) {
  constexpr std::int64_t kWidth = 1061, kRows = 62;  // 65782 elements: every 16-bit pattern
  const auto make = [](const tl::Options& options) {
    return tl::jit(
        "widen_blocks",
        [](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress s) {
          const tl::Value tx = tl::tensor(x, {kRows, kWidth}), ty = tl::tensor(y, {kRows, kWidth});
          const tl::Value ts = tl::tensor(s, {kRows, 1});
          for (tl::Value r : tl::range(tl::block_idx(), kRows, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, kWidth}, {r, 0}).to(DataType::kFloat32);
            tl::store((v * 2.0f).to(x.dtype()), ty, {r, 0});
            tl::store(tl::reduce_sum(v * v, {1}, true), ts, {r, 0});
          }
        },
        options);
  };
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    TensorStorage x({kRows, kWidth}, dtype);
    auto* bits = static_cast<std::uint16_t*>(x.data());
    for (std::int64_t i = 0; i < kRows * kWidth; ++i) bits[i] = static_cast<std::uint16_t>(i);
    TensorStorage yi = poisoned({kRows, kWidth}, dtype), yc = poisoned({kRows, kWidth}, dtype);
    TensorStorage si = poisoned({kRows, 1}, DataType::kFloat32);
    TensorStorage sc = poisoned({kRows, 1}, DataType::kFloat32);
    make(tl::Options{.backend = "interp"}).launch(2, x, yi, si);
    make(tl::Options{.backend = "cpu"}).launch(2, x, yc, sc);
    const std::uint16_t exponent = dtype == DataType::kBFloat16 ? 0x7F80 : 0x7C00;
    const auto is_nan = [&](std::uint16_t h) {
      return (h & exponent) == exponent && (h & ~exponent & 0x7FFF) != 0;
    };
    const auto* pi = static_cast<const std::uint16_t*>(yi.data());
    const auto* pc = static_cast<const std::uint16_t*>(yc.data());
    std::int64_t differing = 0;
    for (std::int64_t i = 0; i < kRows * kWidth; ++i) {
      const bool nan = is_nan(pi[i]) && is_nan(pc[i]) && (pi[i] >> 15) == (pc[i] >> 15);
      if (pi[i] != pc[i] && !nan && differing++ == 0) {
        ADD_FAILURE() << name_of(dtype) << " bits " << std::hex << bits[i] << ": interp " << pi[i]
                      << ", cpu " << pc[i];
      }
    }
    EXPECT_EQ(differing, 0) << name_of(dtype);
    const auto* ri = static_cast<const float*>(si.data());
    const auto* rc = static_cast<const float*>(sc.data());
    for (std::int64_t r = 0; r < kRows; ++r) {
      if (std::isnan(ri[r])) {
        EXPECT_TRUE(std::isnan(rc[r])) << name_of(dtype) << " row " << r;
      } else if (std::isinf(ri[r])) {
        EXPECT_EQ(rc[r], ri[r]) << name_of(dtype) << " row " << r;
      } else {
        EXPECT_NEAR(rc[r], ri[r], 4 * 0x1p-24 * std::fabs(ri[r])) << name_of(dtype) << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
