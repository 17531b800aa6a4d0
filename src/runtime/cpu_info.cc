#include "tileops/runtime/cpu_info.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "hwy/highway.h"
#include "hwy/targets.h"
#include "tileops/core/error.h"
#include "tileops/runtime/knobs.h"

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define TILEOPS_AMX_DETECT 1
#endif

namespace tileops {

namespace {

// Highway's always-available fallbacks; every forced mask keeps them.
constexpr std::int64_t kHwyScalarTargets = HWY_SCALAR | HWY_EMU128;

struct NamedTarget {
  std::string_view name;
  SimdTarget target;
  std::int64_t required;  // the Highway target the CPU must run (0: none)
  std::int64_t allowed;   // the Highway targets the kernels may then dispatch to
};

#if HWY_ARCH_X86
constexpr std::int64_t kHwySse4Down = HWY_SSE4 | HWY_SSSE3 | kHwyScalarTargets;
constexpr std::int64_t kHwyAvx2Down = HWY_AVX2 | kHwySse4Down;
constexpr NamedTarget kNamedTargets[] = {
    {"native", SimdTarget::kNative, 0, 0},
    {"avx512", SimdTarget::kAvx512, HWY_AVX3, HWY_AVX3 | HWY_AVX3_DL | kHwyAvx2Down},
    {"avx2", SimdTarget::kAvx2, HWY_AVX2, kHwyAvx2Down},
    {"sse4", SimdTarget::kSse4, HWY_SSE4, kHwySse4Down},
    {"scalar", SimdTarget::kScalar, 0, kHwyScalarTargets},
};
constexpr const char* kAcceptedTargets = "native, avx512, avx2, sse4, scalar";
#else
constexpr NamedTarget kNamedTargets[] = {
    {"native", SimdTarget::kNative, 0, 0},
    {"scalar", SimdTarget::kScalar, 0, kHwyScalarTargets},
};
// Where the baseline is a SIMD target (NEON on Arm), Highway compiles no scalar one: forcing
// "scalar" would dispatch to the baseline all the same, so it is refused.
constexpr const char* kAcceptedTargets =
    (HWY_TARGETS & kHwyScalarTargets) != 0 ? "native, scalar" : "native";
#endif

// Applies the choice to Highway before the first dispatch (the library's static initialisation
// runs before main); the per-call check then only reads the result.
[[maybe_unused]] const bool kSimdTargetApplied = [] {
  (void)simd_target_choice();
  return true;
}();

}  // namespace

SimdTargetChoice parse_simd_target(const char* value, std::int64_t supported) {
  SimdTargetChoice choice;
  choice.reason = "detected";
  if (value == nullptr || *value == '\0') return choice;
  const std::string_view text(value);
  for (const NamedTarget& named : kNamedTargets) {
    if (named.name != text) continue;
    choice.target = named.target;
    choice.name = std::string(named.name);
    if (named.target == SimdTarget::kNative) {
      choice.reason = "detected (TILEOPS_SIMD_TARGET=native)";
      return choice;
    }
    if (named.target == SimdTarget::kScalar && (HWY_TARGETS & kHwyScalarTargets) == 0) {
      choice.reason = "unusable";
      choice.error = "this build compiles no scalar target (its baseline is " +
                     std::string(hwy::TargetName(HWY_STATIC_TARGET)) + ")";
      return choice;
    }
    if (named.required != 0 && (supported & named.required) == 0) {
      choice.reason = "unusable";
      choice.error = "this CPU lacks it (it runs " +
                     std::string(hwy::TargetName(supported & ~(supported - 1))) + " at best)";
      return choice;
    }
    choice.forced = true;
    choice.reason = "forced by TILEOPS_SIMD_TARGET=" + choice.name;
    choice.hwy_mask = (supported & named.allowed) | kHwyScalarTargets;
    return choice;
  }
  choice.name = std::string(text);
  choice.reason = "unusable";
  choice.error = "unknown target";
  return choice;
}

const SimdTargetChoice& simd_target_choice() {
  static const SimdTargetChoice choice = [] {
    const std::optional<std::string> forced = knob("TILEOPS_SIMD_TARGET");
    SimdTargetChoice parsed =
        parse_simd_target(forced ? forced->c_str() : nullptr, hwy::SupportedTargets());
    // Highway dispatches by SupportedTargets(); narrowing it is what its test hook is for.
    if (parsed.error.empty() && parsed.forced) hwy::SetSupportedTargetsForTest(parsed.hwy_mask);
    return parsed;
  }();
  return choice;
}

const SimdTargetChoice& simd_target() {
  const SimdTargetChoice& choice = simd_target_choice();
  if (!choice.error.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "TILEOPS_SIMD_TARGET='" + choice.name +
                                                 "': " + choice.error + "; expected one of " +
                                                 kAcceptedTargets +
                                                 " (a target this CPU runs), or unset for native");
  }
  return choice;
}

const char* accepted_simd_targets() { return kAcceptedTargets; }

bool simd_target_allows_avx512() {
  const SimdTarget target = simd_target_choice().target;
  return target == SimdTarget::kNative || target == SimdTarget::kAvx512;
}

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
      // Up to 1 TiB: a file is not trusted to keep the shift in range.
      if (in >> size >> unit && size > 0 && (unit == 'K' || unit == 'M') &&
          size <= (std::int64_t{1} << (unit == 'K' ? 30 : 20))) {
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

std::int64_t cpu_streaming_store_bytes() {
  if (const std::optional<long long> bytes =
          knob_integer("TILEOPS_TL_STREAM_BYTES", 0, std::numeric_limits<std::int64_t>::max())) {
    return *bytes;
  }
  return cpu_last_level_cache_bytes();
}

// CPUID is read once: operators ask per call, and in a VM every CPUID is a trap to the host.
CpuVendor cpu_vendor() {
  static const CpuVendor vendor = [] {
#if TILEOPS_AMX_DETECT
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __get_cpuid(0, &eax, &ebx, &ecx, &edx);
    if (ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u) return CpuVendor::kAmd;
    if (ebx == 0x756e6547u && edx == 0x49656e69u && ecx == 0x6c65746eu) return CpuVendor::kIntel;
#endif
    return CpuVendor::kOther;
  }();
  return vendor;
}

int cpu_vector_datapath_bits() {
  const std::string target = simd_dispatched_target();
  if (target.starts_with("AVX3")) {
    static const bool amd_family_19h = [] {
#if TILEOPS_AMX_DETECT
      unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
      __get_cpuid(1, &eax, &ebx, &ecx, &edx);
      const unsigned base = (eax >> 8) & 0xfu;
      const unsigned family = base == 0xfu ? base + ((eax >> 20) & 0xffu) : base;
      return cpu_vendor() == CpuVendor::kAmd && family == 0x19u;
#else
      return false;
#endif
    }();
    return amd_family_19h ? 256 : 512;
  }
  if (target.starts_with("AVX2")) return 256;
  if (target == "SCALAR") return 32;
  return 128;  // SSE4, SSSE3, SSE2, NEON, EMU128; SVE is not built (CMakeLists.txt)
}

const char* version() { return TILEOPS_VERSION; }

}  // namespace tileops
