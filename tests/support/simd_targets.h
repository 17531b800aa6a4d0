// Runs SIMD kernel tests once per Highway target that the library compiled and this CPU runs,
// forcing dynamic dispatch to each in turn.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "hwy/targets.h"

namespace tileops::testing {

// The library's targets on this CPU (CMakeLists.txt disables SSSE3 and AVX3_DL; the test's own
// list may still name them).
inline std::vector<std::int64_t> simd_targets() {
  std::vector<std::int64_t> out;
  for (const std::int64_t t : hwy::SupportedAndGeneratedTargets()) {
#if HWY_ARCH_X86
    if (t == HWY_SSSE3 || t == HWY_AVX3_DL) continue;
#endif
    out.push_back(t);
  }
  return out;
}

// `body()` once per target (named in failures), then normal dispatch again.
template <typename Body>
void for_each_simd_target(Body&& body) {
  for (const std::int64_t t : simd_targets()) {
    hwy::SetSupportedTargetsForTest(t);
    SCOPED_TRACE(hwy::TargetName(t));
    body();
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace tileops::testing
