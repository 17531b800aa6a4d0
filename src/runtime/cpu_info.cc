#include "tileops/runtime/cpu_info.h"

#include <unistd.h>

#include <fstream>

#include "hwy/highway.h"
#include "hwy/targets.h"

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define TILEOPS_AMX_DETECT 1
#endif

namespace tileops {

std::vector<std::string> cpu_simd_targets() {
  std::vector<std::string> names;
  const std::int64_t supported = hwy::SupportedTargets() & HWY_TARGETS;
  for (std::int64_t bit = 1; bit != 0 && bit <= supported; bit <<= 1) {
    if ((supported & bit) != 0) names.emplace_back(hwy::TargetName(bit));
  }
  return names;  // lower bits are better targets in Highway's encoding
}

std::string cpu_best_simd_target() {
  const auto names = cpu_simd_targets();
  return names.empty() ? "none" : names.front();
}

bool cpu_amx_bf16() {
#if TILEOPS_AMX_DETECT
  static const bool usable = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;
    if ((edx & kAmxBf16) == 0 || (edx & kAmxTile) == 0) return false;
    __get_cpuid(1, &eax, &ebx, &ecx, &edx);
    if ((ecx & (1u << 27)) == 0) return false;  // OSXSAVE: xgetbv is allowed
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    constexpr unsigned kTileState = 3u << 17;  // XTILECFG and XTILEDATA
    if ((lo & kTileState) != kTileState) return false;
    // Linux hands out the 8 KiB tile state only on request, once per process.
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
#else
  return false;
#endif
}

bool cpu_avx512_bf16() {
#if TILEOPS_AMX_DETECT
  static const bool usable = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kAvx512Bf16 = 1u << 5;
    if ((eax & kAvx512Bf16) == 0) return false;
    __get_cpuid(1, &eax, &ebx, &ecx, &edx);
    if ((ecx & (1u << 27)) == 0) return false;  // OSXSAVE: xgetbv is allowed
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    constexpr unsigned kAvx512State = 0xe6;  // SSE, AVX, opmask and both halves of the zmm state
    return (lo & kAvx512State) == kAvx512State;
  }();
  return usable;
#else
  return false;
#endif
}

std::int64_t cpu_last_level_cache_bytes() {
  static const std::int64_t bytes = [] {
    for (const char* index : {"index3", "index2"}) {
      std::ifstream in(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
      std::int64_t size = 0;
      char unit = 0;
      if (in >> size >> unit && size > 0 && (unit == 'K' || unit == 'M')) {
        return size << (unit == 'K' ? 10 : 20);
      }
    }
    long l3 = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return l3 > 0 ? static_cast<std::int64_t>(l3) : std::int64_t{32} << 20;
  }();
  return bytes;
}

const char* version() { return TILEOPS_VERSION; }

}  // namespace tileops
