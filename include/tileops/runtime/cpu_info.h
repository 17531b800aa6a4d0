// What this CPU offers, as the SIMD dispatch sees it.
#pragma once

#include <string>
#include <vector>

namespace tileops {

// Highway targets this CPU supports that the build compiled for, best first ("AVX2", ...).
std::vector<std::string> cpu_simd_targets();
// The target the kernels dispatch to.
std::string cpu_best_simd_target();
// tileops version string ("0.1.0").
const char* version();

}  // namespace tileops
