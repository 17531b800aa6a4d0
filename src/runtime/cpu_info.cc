#include "tileops/runtime/cpu_info.h"

#include "hwy/highway.h"
#include "hwy/targets.h"

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

const char* version() { return TILEOPS_VERSION; }

}  // namespace tileops
