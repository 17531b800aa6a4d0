// cpu_info against what Linux reports: the SIMD targets, AMX-BF16 present exactly when
// /proc/cpuinfo lists amx_tile and amx_bf16 (the kernel then also grants the tile state), and
// AVX512-BF16 exactly when it lists avx512_bf16, and the vector execution width.
#include "tileops/runtime/cpu_info.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/simd_targets.h"

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

// The execution width per dispatched target: the vector width, except AVX-512 on AMD family 19h
// (Zen 4), which /proc/cpuinfo names as vendor AuthenticAMD, "cpu family : 25".
TEST(CpuInfo, VectorDatapathBitsPerTarget) {
  bool zen4 = false;
#if defined(__x86_64__) && defined(__linux__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool amd = false;
  int family = -1;
  while (std::getline(in, line) && line.find(':') != std::string::npos) {
    const std::string value = line.substr(line.find(':') + 1);
    if (line.rfind("vendor_id", 0) == 0) amd = value.find("AuthenticAMD") != std::string::npos;
    if (line.rfind("cpu family", 0) == 0) family = std::stoi(value);
  }
  ASSERT_GE(family, 0) << "no cpu family line in /proc/cpuinfo";
  zen4 = amd && family == 25;
#endif
  testing::for_each_simd_target([&] {
    const std::string target = simd_dispatched_target();
    const int expected = target.rfind("AVX3", 0) == 0   ? (zen4 ? 256 : 512)
                         : target.rfind("AVX2", 0) == 0 ? 256
                         : target == "SCALAR"           ? 32
                                                        : 128;
    EXPECT_EQ(cpu_vector_datapath_bits(), expected) << target;
  });
}

// cpu_vendor() against /proc/cpuinfo's vendor_id (x86 Linux; elsewhere kOther).
TEST(CpuInfo, VendorMatchesProcCpuinfo) {
#if defined(__x86_64__) && defined(__linux__)
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor;
  while (vendor.empty() && std::getline(in, line)) {
    if (line.rfind("vendor_id", 0) == 0) vendor = line.substr(line.find(':') + 1);
  }
  ASSERT_FALSE(vendor.empty()) << "no vendor_id line in /proc/cpuinfo";
  const CpuVendor expected = vendor.find("GenuineIntel") != std::string::npos   ? CpuVendor::kIntel
                             : vendor.find("AuthenticAMD") != std::string::npos ? CpuVendor::kAmd
                                                                                : CpuVendor::kOther;
  EXPECT_EQ(cpu_vendor(), expected) << vendor;
#else
  EXPECT_EQ(cpu_vendor(), CpuVendor::kOther);
#endif
}

}  // namespace
}  // namespace tileops
