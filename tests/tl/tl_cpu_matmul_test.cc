// The cpu backend's matmul_acc on tiles read in place: a left operand whose rows lie apart in
// the tensor (row stride > its width) is passed to matmul_acc with that stride instead of being
// copied; partial tiles at the edges are still copied (zero-padded). Checked against the
// interpreter, and the generated source is checked to take the in-place path.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/tl/tl_test_util.h"

namespace tileops::testing::tl_test {
namespace {

const auto f32 = DataType::kFloat32;

// C[m, n] = A[m, k] @ B[k, n], A with row stride lda; 27 x tn output tiles (4 blocks of 6 rows,
// then 2, then 1: every micro-kernel row count; tn 16, 32 and 64 pick the micro-kernel's width),
// k slices of 32.
tl::Kernel strided_matmul(const tl::Options& o) {
  return tl::jit(
      "strided_lhs_matmul",
      [](tl::GlobalAddress a, tl::GlobalAddress b, tl::GlobalAddress c, tl::Int m, tl::Int n,
         tl::Int k, tl::Int lda, tl::ConstExpr<int> tn) {
        const tl::Value ta = tl::tensor(a, {m, k}, {lda, 1}), tb = tl::tensor(b, {k, n});
        const tl::Value tc = tl::tensor(c, {m, n});
        const tl::Value col_tiles = tl::ceildiv(n, *tn);
        for (tl::Value t :
             tl::range(tl::block_idx(), tl::ceildiv(m, 27) * col_tiles, tl::block_num())) {
          const tl::Value row = tl::floordiv(t, col_tiles) * 27, col = (t % col_tiles) * *tn;
          tl::Var acc = tl::zeros({27, *tn}, f32);
          for (tl::Value p : tl::range(tl::ceildiv(k, 32))) {
            acc = tl::matmul_acc(acc, tl::load(ta, {27, 32}, {row, p * 32}),
                                 tl::load(tb, {32, *tn}, {p * 32, col}));
          }
          tl::store(acc, tc, {row, col});
        }
      },
      o);
}

// Tile width (24: not a multiple of 16, so no vector micro-kernel) and the -march target of the
// generated code: "" (this CPU; with AVX-512, the 16-lane micro-kernels for widths 32 and 64),
// "haswell" (the 8-lane AVX2 micro-kernel), "x86-64" (vector code without FMA instructions).
using Param = std::tuple<int, std::string>;
class TlCpuMatmul : public ::testing::TestWithParam<Param> {};

// covers: matmul_acc load
TEST_P(TlCpuMatmul, LeftOperandReadInPlaceAtItsRowStride) {
  const auto& [tn, target] = GetParam();
  // Per process: two runs at once (worktrees, lanes) removed each other's dumps.
  const std::filesystem::path dir =
      fresh_dump_dir("tileops_tl_matmul_test_" + std::to_string(tn) + "_" + target);
  std::mt19937_64 rng(17);
  // m = 93: three full row tiles read in place, the fourth copied; k = 80: the last slice copied;
  // n = 1.5 tn: the second column tile partial.
  const std::int64_t m = 93, n = tn * 3 / 2, k = 80, lda = 131;
  TensorStorage a = random_tensor({m, lda}, f32, rng), b = random_tensor({k, n}, f32, rng);
  TensorStorage expected = poisoned({m, n}, f32), actual = poisoned({m, n}, f32);
  strided_matmul({.backend = "interp"}).launch(3, a, b, expected, m, n, k, lda, tn);
  strided_matmul({.backend = "cpu", .dump_dir = dir.string(), .target = target})
      .launch(3, a, b, actual, m, n, k, lda, tn);
  EXPECT_EQ(compare(actual, to_doubles(expected), dot_tolerance(f32, k)), "");
  std::string source;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".cc") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    source = text.str();
  }
  // The left tile's row stride is the tensor's when read in place, its width when copied.
  EXPECT_NE(source.find("_s0 : 32;"), std::string::npos) << source.substr(0, 200);
  std::filesystem::remove_all(dir);
}

// -march names are per architecture, and haswell code needs a CPU with AVX2 and FMA.
std::vector<std::string> targets() {
  std::vector<std::string> t = {""};
#if defined(__x86_64__)
  t.push_back("x86-64");
  __builtin_cpu_init();  // this runs during static initialisation
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) t.push_back("haswell");
#endif
  return t;
}
INSTANTIATE_TEST_SUITE_P(TileWidthsAndTargets, TlCpuMatmul,
                         ::testing::Combine(::testing::Values(16, 24, 32, 64),
                                            ::testing::ValuesIn(targets())));

}  // namespace
}  // namespace tileops::testing::tl_test
