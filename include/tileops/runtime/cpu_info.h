// What this CPU offers, as the SIMD dispatch sees it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tileops {

// Highway targets this CPU supports that the build compiled for, best first ("AVX2", ...).
std::vector<std::string> cpu_simd_targets();
// The target the kernels dispatch to.
std::string cpu_best_simd_target();
// True when the CPU has AMX-TILE and AMX-BF16 and the OS lets this process use the tile state
// (Linux: asked once, with arch_prctl). bfloat16 matrix products then run on AMX tiles unless
// the environment variable TILEOPS_AMX is "0".
bool cpu_amx_bf16();
// True when the CPU has AVX512-BF16 (VDPBF16PS) and the OS saves the AVX-512 state: bfloat16
// matrix products without AMX then run on that dot-product instruction.
bool cpu_avx512_bf16();
// The last-level cache this CPU's cores share, in bytes: from sysfs (Linux: cpu0's index3, else
// index2), else sysconf, else 32 MiB. sysconf derives it from cpuid, which hypervisors can report
// as the whole package's: 384 MiB on a 2-vCPU Zen 5 VM whose cores share 32 MiB. Outputs larger
// than this are written with streaming stores.
std::int64_t cpu_last_level_cache_bytes();
// tileops version string ("0.1.0").
const char* version();

}  // namespace tileops
