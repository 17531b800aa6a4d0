// cpu_info against what Linux reports: the SIMD targets, AMX-BF16 present exactly when
// /proc/cpuinfo lists amx_tile and amx_bf16 (the kernel then also grants the tile state), and
// AVX512-BF16 exactly when it lists avx512_bf16.
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

#if defined(__x86_64__) && defined(__linux__)
// The flags line of /proc/cpuinfo, padded with spaces (" flag flag ... ").
std::string proc_cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      flags.assign(1, ' ');
      flags.append(line, line.find(':') + 1);
      flags.push_back(' ');
      break;
    }
  }
  return flags;
}
#endif

TEST(CpuInfo, AmxMatchesProcCpuinfo) {
#if defined(__x86_64__) && defined(__linux__)
  const std::string flags = proc_cpu_flags();
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo (or it cannot be read)";
  const bool listed = flags.find(" amx_tile ") != std::string::npos &&
                      flags.find(" amx_bf16 ") != std::string::npos;
  EXPECT_EQ(cpu_amx_bf16(), listed) << "/proc/cpuinfo flags:" << flags;
#else
  EXPECT_FALSE(cpu_amx_bf16());
#endif
}

TEST(CpuInfo, Avx512Bf16MatchesProcCpuinfo) {
#if defined(__x86_64__) && defined(__linux__)
  const std::string flags = proc_cpu_flags();
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo (or it cannot be read)";
  // Linux lists the flag only where the kernel saves the AVX-512 state.
  EXPECT_EQ(cpu_avx512_bf16(), flags.find(" avx512_bf16 ") != std::string::npos)
      << "/proc/cpuinfo flags:" << flags;
#else
  EXPECT_FALSE(cpu_avx512_bf16());
#endif
}

}  // namespace
}  // namespace tileops
