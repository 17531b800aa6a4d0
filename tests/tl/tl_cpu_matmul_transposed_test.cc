// The cpu backend's matmul with a transposed left operand (xᵀ @ y for x stored [K, M]): the
// transpose is not materialised; matmul_acc reads x transposed, in place at the tensor's row stride
// when the tile lies inside it, else from the copied (zero-padded) tile. Checked against the
// interpreter for float32 and bfloat16 tiles, for an output 64 wide (the register-blocked
// kernels) and 4 wide (the narrow kernel, which takes x back untransposed), with partial row
// tiles and k slices. The right operand is a [32, 64] or [32, 4] slice of a [k, 68] tensor: read
// in place at that row stride (ldb) as well, and for bfloat16 held as bits (u16; with
// AVX512-BF16 the 64-wide product packs it for VDPBF16PS next to the transposed A). The generated
// source is checked to take those paths, and to prefetch the next iteration's rows of the
// copied right operand, and an atomic tile's destination lines.
#include <filesystem>
#include <iterator>
#include <regex>
#include <string>
#include <tuple>

#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const auto f32 = DataType::kFloat32;

// C[m, 68] = X[k, m]ᵀ @ Y[k, 68] (X with row stride ldx >= m), in tiles of 27 rows and k slices
// of 32; columns 0..63 and 64..67 as two products; the result is added atomically into C.
tl::Kernel transposed_lhs_matmul(const tl::Options& o) {
  return tl::jit(
      "transposed_lhs_matmul",
      [](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress c, tl::Int m, tl::Int k,
         tl::Int ldx) {
        const tl::Value tx = tl::tensor(x, {k, m}, {ldx, 1}), ty = tl::tensor(y, {k, 68});
        const tl::Value tc = tl::tensor(c, {m, 68});
        for (tl::Value t : tl::range(tl::block_idx(), tl::ceildiv(m, 27), tl::block_num())) {
          const tl::Value row = t * 27;
          tl::Var c64 = tl::zeros({27, 64}, f32), c4 = tl::zeros({27, 4}, f32);
          for (tl::Value p : tl::range(tl::ceildiv(k, 32))) {
            c64 = tl::matmul_acc(c64, tl::load(tx, {32, 27}, {p * 32, row}).T(),
                                 tl::load(ty, {32, 64}, {p * 32, 0}));
            c4 = tl::matmul_acc(c4, tl::load(tx, {32, 27}, {p * 32, row}).T(),
                                tl::load(ty, {32, 4}, {p * 32, 64}));
          }
          tl::atomic_add(c64, tc, {row, 0});
          tl::atomic_add(c4, tc, {row, 64});
        }
      },
      o);
}

// dtype of X and Y, and the -march target ("" for this CPU).
using Param = std::tuple<DataType, std::string>;
class TlCpuTransposedMatmul : public ::testing::TestWithParam<Param> {};

// covers: matmul_acc T load atomic_add
TEST_P(TlCpuTransposedMatmul, LeftOperandReadTransposedInPlaceOrCopied) {
  const auto& [dtype, target] = GetParam();
#if defined(__x86_64__)
  if (target == "haswell" && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    FAIL() << "the haswell target needs a CPU with AVX2 and FMA";
  }
#endif
  const std::filesystem::path dir = fresh_dump_dir(
      "tileops_tl_transposed_matmul_" + std::to_string(static_cast<int>(dtype)) + "_" + target);
  std::mt19937_64 rng(29);
  // m = 93: three row tiles in place, the fourth partial (copied); k = 80: the last slice partial.
  const std::int64_t m = 93, k = 80, ldx = 101;
  TensorStorage x = random_tensor({k, ldx}, dtype, rng), y = random_tensor({k, 68}, dtype, rng);
  // The products are added atomically onto the same random values in both outputs.
  TensorStorage expected = random_tensor({m, 68}, f32, rng), actual = poisoned({m, 68}, f32);
  from_doubles(actual, to_doubles(expected));
  transposed_lhs_matmul({.backend = "interp"}).launch(3, x, y, expected, m, k, ldx);
  transposed_lhs_matmul({.backend = "cpu", .dump_dir = dir.string(), .target = target})
      .launch(3, x, y, actual, m, k, ldx);
  EXPECT_EQ(compare(actual, to_doubles(expected), dot_tolerance(f32, k)), "");
  const std::string source = dumped_source(dir.string());
  const std::string trans = dtype == f32 ? ", false, true>(" : ", true, true>(";
  EXPECT_NE(source.find("tl_matmul_acc<27, 64, 32" + trans), std::string::npos);
  EXPECT_NE(source.find("tl_matmul_acc<27, 4, 32" + trans), std::string::npos);
  // Both operands' row strides are run-time values: A's transposed rows and B's in place.
  const std::regex strided(
      R"(tl_matmul_acc<27, (64|4), 32, \w+, true>\(v\d+, v\d+, v\d+, v\d+_ld, v\d+_ld\);)");
  EXPECT_EQ(std::distance(std::sregex_iterator(source.begin(), source.end(), strided),
                          std::sregex_iterator()),
            2);
  // bfloat16: the right operands stay bits, pointers into the tensor where they lie in it.
  const std::regex bits(R"(u16\* const v\d+ = v\d+_direct \?)");
  EXPECT_EQ(std::regex_search(source, bits), dtype == DataType::kBFloat16);
  EXPECT_EQ(source.find("tl_transpose8<"), std::string::npos);
  EXPECT_NE(source.find("tl_prefetch_span<false>("), std::string::npos);
  EXPECT_NE(source.find("tl_prefetch_span<true>("), std::string::npos);
  std::filesystem::remove_all(dir);
}

// "" is the default target ($TILEOPS_TL_TARGET, else this CPU); haswell only on x86 (a cross
// compiler refuses x86 names).
#if defined(__x86_64__)
INSTANTIATE_TEST_SUITE_P(DtypesAndTargets, TlCpuTransposedMatmul,
                         ::testing::Values(Param{f32, ""}, Param{DataType::kBFloat16, ""},
                                           Param{f32, "haswell"}));
#else
INSTANTIATE_TEST_SUITE_P(DtypesAndTargets, TlCpuTransposedMatmul,
                         ::testing::Values(Param{f32, ""}, Param{DataType::kBFloat16, ""}));
#endif

}  // namespace
}  // namespace tileops::testing::tl_test
