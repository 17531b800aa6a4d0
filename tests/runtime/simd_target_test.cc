// TILEOPS_SIMD_TARGET: the parser's answers, and, under whatever value CTest gives this process
// (native, avx512, avx2, sse4, scalar, or a bad one), the dispatched Highway target, the
// hand-written AVX-512 paths' gates, and a few operators against a float64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/add.h"
#include "tileops/ops/linear.h"
#include "tileops/ops/rms_norm.h"
#include "tileops/ops/scaled_softmax.h"
#include "tileops/runtime/cpu_info.h"

namespace tileops {
namespace {

#if HWY_ARCH_X86
constexpr std::int64_t kAvx2Cpu = HWY_AVX2 | HWY_SSE4 | HWY_SSSE3 | HWY_SCALAR | HWY_EMU128;

TEST(SimdTargetParse, ForcedTargetsNarrowTheMask) {
  const std::int64_t avx512_cpu = HWY_AVX3 | kAvx2Cpu;
  const SimdTargetChoice avx2 = parse_simd_target("avx2", avx512_cpu);
  EXPECT_EQ(avx2.error, "");
  EXPECT_TRUE(avx2.forced);
  EXPECT_EQ(avx2.target, SimdTarget::kAvx2);
  EXPECT_EQ(avx2.hwy_mask, kAvx2Cpu);
  EXPECT_EQ(avx2.reason, "forced by TILEOPS_SIMD_TARGET=avx2");
  const SimdTargetChoice sse4 = parse_simd_target("sse4", avx512_cpu);
  EXPECT_EQ(sse4.hwy_mask & (HWY_AVX3 | HWY_AVX2), 0);
  EXPECT_NE(sse4.hwy_mask & HWY_SSE4, 0);
  const SimdTargetChoice scalar = parse_simd_target("scalar", avx512_cpu);
  EXPECT_EQ(scalar.hwy_mask, HWY_SCALAR | HWY_EMU128);
  EXPECT_EQ(parse_simd_target("avx512", avx512_cpu).hwy_mask, avx512_cpu);
}

TEST(SimdTargetParse, TargetTheCpuLacksIsAnError) {
  const SimdTargetChoice choice = parse_simd_target("avx512", kAvx2Cpu);
  EXPECT_NE(choice.error.find("lacks"), std::string::npos) << choice.error;
  EXPECT_NE(choice.error.find("AVX2"), std::string::npos) << choice.error;
  EXPECT_FALSE(choice.forced);
  EXPECT_EQ(choice.hwy_mask, 0);
}
#endif

TEST(SimdTargetParse, UnsetEmptyAndNativeAreDetected) {
  const std::int64_t supported = hwy::SupportedTargets();
  for (const char* value : {static_cast<const char*>(nullptr), "", "native"}) {
    const SimdTargetChoice choice = parse_simd_target(value, supported);
    EXPECT_EQ(choice.error, "");
    EXPECT_FALSE(choice.forced);
    EXPECT_EQ(choice.target, SimdTarget::kNative);
    EXPECT_EQ(choice.hwy_mask, 0);
  }
}

// `tileops env` and the error messages print accepted_simd_targets(): exactly the names the
// parser knows on this architecture (on Arm, no x86 names).
TEST(SimdTargetParse, AcceptedListIsWhatTheParserKnows) {
  std::vector<std::string> listed;
  std::string names = accepted_simd_targets();
  for (std::size_t at = 0; at != std::string::npos;) {
    const std::size_t comma = names.find(", ", at);
    listed.push_back(names.substr(at, comma == std::string::npos ? comma : comma - at));
    at = comma == std::string::npos ? comma : comma + 2;
  }
  for (const char* name : {"native", "avx512", "avx2", "sse4", "scalar"}) {
    const bool known = parse_simd_target(name, ~std::int64_t{0}).error != "unknown target";
    const bool is_listed = std::find(listed.begin(), listed.end(), name) != listed.end();
    // "scalar" is known everywhere but refused (not listed) where the baseline is SIMD.
    if (std::string(name) != "scalar" || HWY_ARCH_X86) {
      EXPECT_EQ(known, is_listed) << name;
    }
  }
  EXPECT_EQ(listed.front(), "native");
  EXPECT_EQ(std::find(listed.begin(), listed.end(), "avx2") != listed.end(), HWY_ARCH_X86 != 0);
}

TEST(SimdTargetParse, UnknownNamesAreErrors) {
  for (const char* value : {"AVX2", "avx", "haswell", " avx2", "scalar2"}) {
    const SimdTargetChoice choice = parse_simd_target(value, hwy::SupportedTargets());
    EXPECT_EQ(choice.error, "unknown target") << value;
    EXPECT_EQ(choice.name, value);
  }
}

std::string env_value() {
  const char* value = std::getenv("TILEOPS_SIMD_TARGET");
  return value == nullptr ? "" : value;
}

// The Highway target name the choice must dispatch to on this CPU.
std::string expected_dispatch(SimdTarget target) {
  switch (target) {
#if HWY_ARCH_X86
    case SimdTarget::kAvx2:
      return hwy::TargetName(HWY_AVX2);
    case SimdTarget::kSse4:
      return hwy::TargetName(HWY_SSE4);
#endif
    case SimdTarget::kScalar: {
      const std::int64_t compiled = HWY_TARGETS & (HWY_SCALAR | HWY_EMU128);
      return hwy::TargetName(compiled & ~(compiled - 1));
    }
    default:
      return cpu_best_simd_target();
  }
}

TEST(SimdTargetProcess, BadValueFailsEveryCall) {
  const SimdTargetChoice& choice = simd_target_choice();
  if (choice.error.empty()) {
    EXPECT_NO_THROW(simd_target());
    return;  // the good values are the next tests'
  }
  try {
    simd_target();
    ADD_FAILURE() << "no error for TILEOPS_SIMD_TARGET=" << env_value();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    const std::string message = e.what();
    EXPECT_NE(message.find("TILEOPS_SIMD_TARGET='" + env_value() + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find("expected one of native"), std::string::npos) << message;
  }
  std::mt19937_64 rng(1);
  auto a = testing::random_tensor({3, 40}, DataType::kFloat32, rng);
  auto b = testing::random_tensor({3, 40}, DataType::kFloat32, rng);
  auto out = testing::poisoned({3, 40}, DataType::kFloat32);
  try {
    ops::add(a.view(), b.view(), out.view());
    ADD_FAILURE() << "add ran under TILEOPS_SIMD_TARGET=" << env_value();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("TILEOPS_SIMD_TARGET"), std::string::npos) << e.what();
  }
}

class SimdTargetRun : public ::testing::Test {
 protected:
  void SetUp() override {
    // CTest runs only the tests above under bad values.
    ASSERT_EQ(simd_target_choice().error, "") << "TILEOPS_SIMD_TARGET=" << env_value();
  }
};

TEST_F(SimdTargetRun, DispatchesToTheForcedTarget) {
  const SimdTargetChoice& choice = simd_target();
  EXPECT_EQ(choice.forced, !env_value().empty() && env_value() != "native");
  EXPECT_EQ(simd_dispatched_target(), expected_dispatch(choice.target));
  EXPECT_EQ(cpu_best_simd_target(), simd_dispatched_target());
  const bool avx512 = choice.target == SimdTarget::kNative || choice.target == SimdTarget::kAvx512;
  EXPECT_EQ(simd_target_allows_avx512(), avx512);
  if (!avx512) {
    EXPECT_FALSE(ops::cpu::dpbf16_enabled());
    EXPECT_FALSE(ops::cpu::amx_bf16_enabled());
  }
}

TEST_F(SimdTargetRun, OperatorsMatchTheReference) {
  std::mt19937_64 rng(41);
  for (const DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
    SCOPED_TRACE(dtype == DataType::kFloat32 ? "float32" : "bfloat16");
    const std::int64_t rows = 5, width = 131;  // odd: the vector loops' tails
    auto a = testing::random_tensor({rows, width}, dtype, rng);
    auto b = testing::random_tensor({rows, width}, dtype, rng);
    auto out = testing::poisoned({rows, width}, dtype);
    ops::add(a.view(), b.view(), out.view());
    const auto xa = testing::to_doubles(a.view()), xb = testing::to_doubles(b.view());
    std::vector<double> sum(xa.size());
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = xa[i] + xb[i];
    EXPECT_EQ(testing::compare(out.view(), sum, testing::tolerance_for(dtype)), "") << "add";

    auto weight = testing::random_tensor({width}, dtype, rng);
    ops::rms_norm(a.view(), weight.view(), 1e-6, out.view());
    EXPECT_EQ(testing::compare(
                  out.view(),
                  testing::reference::rms_norm(xa, testing::to_doubles(weight.view()), 1e-6, width),
                  testing::tolerance_for(dtype)),
              "")
        << "rms_norm";

    ops::scaled_softmax(a.view(), 0.7, out.view());
    EXPECT_EQ(
        testing::compare(out.view(), testing::reference::softmax_rows(xa, width, 0.7, false, rows),
                         testing::tolerance_for(dtype)),
        "")
        << "scaled_softmax";

    for (const std::int64_t m : {1, 3, 37}) {  // decode rows and the blocked GEMM
      auto x = testing::random_tensor({m, width}, dtype, rng);
      auto w = testing::random_tensor({45, width}, dtype, rng);
      auto y = testing::poisoned({m, 45}, dtype);
      ops::linear(x.view(), w.view(), Tensor(), y.view());
      EXPECT_EQ(testing::compare(y.view(), testing::reference::linear(x.view(), w.view(), nullptr),
                                 testing::dot_tolerance(dtype, width)),
                "")
          << "linear M=" << m;
    }
  }
}

}  // namespace
}  // namespace tileops
