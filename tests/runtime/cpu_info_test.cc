// cpu_info against what Linux reports: the SIMD targets, and AMX-BF16 present exactly when
// /proc/cpuinfo lists amx_tile and amx_bf16 (the kernel then also grants the tile state).
#include "tileops/runtime/cpu_info.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tileops {
namespace {

TEST(CpuInfo, SimdTargetsBestFirst) {
  const auto targets = cpu_simd_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(cpu_best_simd_target(), targets.front());
}

TEST(CpuInfo, AmxMatchesProcCpuinfo) {
#if defined(__x86_64__) && defined(__linux__)
  std::ifstream in("/proc/cpuinfo");
  ASSERT_TRUE(in) << "cannot read /proc/cpuinfo";
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags.assign(1, ' ');
      flags.append(line, line.find(':') + 1);
      flags.push_back(' ');
      break;
    }
  }
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  const bool listed = flags.find(" amx_tile ") != std::string::npos &&
                      flags.find(" amx_bf16 ") != std::string::npos;
  EXPECT_EQ(cpu_amx_bf16(), listed) << "/proc/cpuinfo flags:" << flags;
#else
  EXPECT_FALSE(cpu_amx_bf16());
#endif
}

}  // namespace
}  // namespace tileops
