// The cpu backend's matmul_acc on tiles read in place: an operand whose rows lie apart in the
// tensor (row stride > its width) is passed to matmul_acc with that stride instead of being
// copied; partial tiles at the edges are still copied (zero-padded). Checked against the
// interpreter, and the generated source is checked to take the in-place path. bfloat16 operands
// on a CPU with AVX512-BF16 take the runtime's VDPBF16PS kernel (every width it blocks by), within
// the float32 dot-product tolerance, with the instruction's flush of subnormals shown to happen
// there and not on a target without it. bfloat16 tiles loaded for matmuls alone are held as their
// bits (read in place where they can be) on every target.
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cmath>
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
  // Each tile's row stride is the tensor's when read in place, its width when copied (the right
  // one's: tn, its rows n apart in the tensor).
  EXPECT_NE(source.find("_s0 : 32;"), std::string::npos) << source.substr(0, 200);
  EXPECT_NE(source.find("_s0 : " + std::to_string(tn) + ";"), std::string::npos);
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
const auto bf16 = DataType::kBFloat16;

// C[m, 116] = A[m, k] @ B[k, 116] in bfloat16 tiles of 27 rows and k slices of 19 (odd: the
// packed kernel pads a pair), its columns as four products 64, 32, 16 and 4 wide (the VDPBF16PS
// kernel's 4, 2 and 1 vectors per row block, 27 rows: blocks of 6, 2 and 1; and the narrow
// dot-product kernel of widths below 16, on any target).
tl::Kernel bf16_matmul(const tl::Options& o) {
  return tl::jit(
      "bf16_matmul_widths",
      [](tl::GlobalAddress a, tl::GlobalAddress b, tl::GlobalAddress c, tl::Int m, tl::Int k) {
        const tl::Value ta = tl::tensor(a, {m, k}), tb = tl::tensor(b, {k, 116});
        const tl::Value tc = tl::tensor(c, {m, 116});
        for (tl::Value t : tl::range(tl::block_idx(), tl::ceildiv(m, 27), tl::block_num())) {
          const tl::Value row = t * 27;
          tl::Var c64 = tl::zeros({27, 64}, f32), c32 = tl::zeros({27, 32}, f32);
          tl::Var c16 = tl::zeros({27, 16}, f32), c4 = tl::zeros({27, 4}, f32);
          for (tl::Value p : tl::range(tl::ceildiv(k, 19))) {
            const tl::Value at = tl::load(ta, {27, 19}, {row, p * 19});
            c64 = tl::matmul_acc(c64, at, tl::load(tb, {19, 64}, {p * 19, 0}));
            c32 = tl::matmul_acc(c32, at, tl::load(tb, {19, 32}, {p * 19, 64}));
            c16 = tl::matmul_acc(c16, at, tl::load(tb, {19, 16}, {p * 19, 96}));
            c4 = tl::matmul_acc(c4, at, tl::load(tb, {19, 4}, {p * 19, 112}));
          }
          tl::store(c64, tc, {row, 0});
          tl::store(c32, tc, {row, 64});
          tl::store(c16, tc, {row, 96});
          tl::store(c4, tc, {row, 112});
        }
      },
      o);
}

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;  // leaf 7, subleaf 1: EAX bit 5
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a >> 5 & 1u) != 0;
#else
  return false;
#endif
}

// The target of the generated code: "native" (this CPU: VDPBF16PS where it has AVX512-BF16,
// whatever $TILEOPS_TL_TARGET says) or "haswell" (the float32 FMA kernel on the bfloat16 values).
class TlCpuBf16Matmul : public ::testing::TestWithParam<std::string> {};

// covers: matmul_acc
TEST_P(TlCpuBf16Matmul, AgreesWithTheInterpreterAndFlushesSubnormalsOnlyWithAvx512Bf16) {
  const std::string& target = GetParam();
#if defined(__x86_64__)
  if (target == "haswell" && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    FAIL() << "the haswell target needs a CPU with AVX2 and FMA";
  }
#endif
  const tl::Kernel interp = bf16_matmul({.backend = "interp"});
  const tl::Kernel cpu = bf16_matmul({.backend = "cpu", .target = target});
  std::mt19937_64 rng(23);
  const std::int64_t m = 58, k = 37;  // a partial row tile and a partial k slice
  TensorStorage a = random_tensor({m, k}, bf16, rng), b = random_tensor({k, 116}, bf16, rng);
  TensorStorage expected = poisoned({m, 116}, f32), actual = poisoned({m, 116}, f32);
  interp.launch(2, a, b, expected, m, k);
  cpu.launch(2, a, b, actual, m, k);
  EXPECT_EQ(compare(actual, to_doubles(expected), dot_tolerance(f32, k)), "");

  // Subnormals: 2^-70 · 2^-70 = 2^-140 (a subnormal product of normal bfloat16 values) in
  // column 0 of row 0, and 2^-130 (a bfloat16 subnormal) · 1 in column 65 of row 1.
  std::vector<double> zeros_a(static_cast<std::size_t>(m * k), 0.0);
  std::vector<double> zeros_b(static_cast<std::size_t>(k * 116), 0.0);
  zeros_a[0] = std::ldexp(1.0, -70), zeros_a[static_cast<std::size_t>(k)] = std::ldexp(1.0, -130);
  zeros_b[0] = std::ldexp(1.0, -70), zeros_b[65] = 1.0;
  from_doubles(a, zeros_a);
  from_doubles(b, zeros_b);
  TensorStorage tiny = poisoned({m, 116}, f32);
  cpu.launch(2, a, b, tiny, m, k);
  const std::vector<double> got = to_doubles(tiny);
  const bool flushes = target == "native" && cpu_has_avx512_bf16();
  EXPECT_EQ(got[0], flushes ? 0.0 : std::ldexp(1.0, -140)) << target;
  EXPECT_EQ(got[116 + 65], flushes ? 0.0 : std::ldexp(1.0, -130)) << target;
  EXPECT_EQ(got[1], 0.0);
}

// bfloat16 tiles loaded for matmuls alone stay bfloat16 bits (plan.h): C1 = A B with A's rows read
// in place at the tensor's row stride through a reshape of a 3-D load, C2 = concat(A rows 0-15,
// A rows 16-31) B; tiles of 32 rows, k 64 (A's rows are VDPBF16PS pairs in place when the row
// stride is even; an odd one packs them), n 32; m = 70 leaves a partial tile (copied, padded).
tl::Kernel bf16_bits_matmul(const tl::Options& o) {
  return tl::jit(
      "bf16_bits_matmul",
      [](tl::GlobalAddress a, tl::GlobalAddress b, tl::GlobalAddress c1, tl::GlobalAddress c2,
         tl::Int m, tl::Int lda) {
        const tl::Value rows3 = tl::tensor(a, {m, 1, 64}, {lda, 64, 1});
        const tl::Value rows2 = tl::tensor(a, {m, 64}, {lda, 1});
        const tl::Value tb = tl::tensor(b, {64, 32});
        const tl::Value t1 = tl::tensor(c1, {m, 32}), t2 = tl::tensor(c2, {m, 32});
        for (tl::Value t : tl::range(tl::block_idx(), tl::ceildiv(m, 32), tl::block_num())) {
          const tl::Value row = t * 32;
          const tl::Value in_place =
              tl::reshape(tl::load(rows3, {32, 1, 64}, {row, 0, 0}), {32, 64});
          tl::store(tl::matmul(in_place, tl::load(tb, {64, 32}, {0, 0})), t1, {row, 0});
          const tl::Value pieces = tl::concat(
              {tl::load(rows2, {16, 64}, {row, 0}), tl::load(rows2, {16, 64}, {row + 16, 0})}, 0);
          tl::store(tl::matmul(pieces, tl::load(tb, {64, 32}, {0, 0})), t2, {row, 0});
        }
      },
      o);
}

// covers: matmul load reshape concat
TEST_P(TlCpuBf16Matmul, TilesLoadedForMatmulsAloneStayBfloat16Bits) {
  const std::string& target = GetParam();
#if defined(__x86_64__)
  if (target == "haswell" && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    FAIL() << "the haswell target needs a CPU with AVX2 and FMA";
  }
#endif
  const std::filesystem::path dir = fresh_dump_dir("tileops_tl_bf16_bits_" + target);
  const tl::Kernel interp = bf16_bits_matmul({.backend = "interp"});
  const tl::Kernel cpu =
      bf16_bits_matmul({.backend = "cpu", .dump_dir = dir.string(), .target = target});
  std::mt19937_64 rng(29);
  const std::int64_t m = 70;
  TensorStorage b = random_tensor({64, 32}, bf16, rng);
  for (const std::int64_t lda : {66, 67}) {  // even: pairs in place; odd: packed
    TensorStorage a = random_tensor({m, lda}, bf16, rng);
    TensorStorage e1 = poisoned({m, 32}, f32), e2 = poisoned({m, 32}, f32);
    TensorStorage c1 = poisoned({m, 32}, f32), c2 = poisoned({m, 32}, f32);
    interp.launch(2, a, b, e1, e2, m, lda);
    cpu.launch(2, a, b, c1, c2, m, lda);
    EXPECT_EQ(compare(c1, to_doubles(e1), dot_tolerance(f32, 64)), "") << lda;
    EXPECT_EQ(compare(c2, to_doubles(e2), dot_tolerance(f32, 64)), "") << lda;
  }
  std::string source;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".cc") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    source = text.str();
  }
  // Every tile is held as bits: no bfloat16 widened on load, A read at the tensor's row stride.
  EXPECT_EQ(source.find("= tl_bf2f(tl_src"), std::string::npos);
  EXPECT_NE(source.find("_direct ? v"), std::string::npos);
  EXPECT_NE(source.find("_s0 : 64;"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// On other architectures the default target ($TILEOPS_TL_TARGET, as the Arm lane sets it): a
// cross compiler refuses -march=native and x86 names.
#if defined(__x86_64__)
INSTANTIATE_TEST_SUITE_P(Targets, TlCpuBf16Matmul,
                         ::testing::Values(std::string("native"), std::string("haswell")));
#else
INSTANTIATE_TEST_SUITE_P(Targets, TlCpuBf16Matmul, ::testing::Values(std::string()));
#endif

INSTANTIATE_TEST_SUITE_P(TileWidthsAndTargets, TlCpuMatmul,
                         ::testing::Combine(::testing::Values(16, 24, 32, 64),
                                            ::testing::ValuesIn(targets())));

}  // namespace
}  // namespace tileops::testing::tl_test
