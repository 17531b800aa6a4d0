// What this CPU offers, as the SIMD dispatch sees it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tileops {

// Highway targets this CPU supports that the build compiled for, best first ("AVX2", ...), less
// those TILEOPS_SIMD_TARGET rules out.
std::vector<std::string> cpu_simd_targets();
// The target the kernels dispatch to (the best of cpu_simd_targets()).
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
// The working set above which the tile language's generated kernels store rows with streaming
// stores: cpu_last_level_cache_bytes(), or TILEOPS_TL_STREAM_BYTES where set (read per call:
// tests reach the streaming path with small tensors).
std::int64_t cpu_streaming_store_bytes();
// The SIMD target the kernels may use: TILEOPS_SIMD_TARGET forces one at or below what this CPU
// offers, so that one machine measures the code other CPUs run. Read and validated once per
// process; applied to Highway's dispatch when the library loads, before any kernel runs.
enum class SimdTarget { kNative, kAvx512, kAvx2, kSse4, kScalar };
struct SimdTargetChoice {
  SimdTarget target = SimdTarget::kNative;
  std::string name = "native";  // as TILEOPS_SIMD_TARGET spells it
  bool forced = false;          // TILEOPS_SIMD_TARGET set to a valid value other than native
  std::string reason;           // "forced by TILEOPS_SIMD_TARGET=avx2" or "detected"
  std::string error;            // non-empty: the variable's value is unusable here (why)
  std::int64_t hwy_mask = 0;    // Highway targets allowed (0: Highway's own detection)
};
// Parses a TILEOPS_SIMD_TARGET value (nullptr or "": native) against `supported`, a Highway mask
// of what the CPU runs. Never throws: an unknown name or a target the CPU lacks sets `error`.
SimdTargetChoice parse_simd_target(const char* value, std::int64_t supported);
// This process's choice (TILEOPS_SIMD_TARGET, read once); never throws.
const SimdTargetChoice& simd_target_choice();
// This process's choice; throws Error (kInvalidArgument) naming the variable, its value and the
// accepted values when TILEOPS_SIMD_TARGET is unusable. Kernels call it before dispatching.
const SimdTargetChoice& simd_target();
// The values TILEOPS_SIMD_TARGET accepts in this build, "native, avx512, avx2, sse4, scalar" on
// x86 ("native" or "native, scalar" elsewhere).
const char* accepted_simd_targets();
// HWY_DYNAMIC_DISPATCH after simd_target(): an unusable TILEOPS_SIMD_TARGET fails the call
// instead of running the detected target.
#define TILEOPS_DYNAMIC_DISPATCH(FUNC) \
  (static_cast<void>(::tileops::simd_target()), HWY_DYNAMIC_DISPATCH(FUNC))
// True unless TILEOPS_SIMD_TARGET forces a target below AVX-512: the hand-written AVX-512 paths
// (VDPBF16PS, AMX) may run when the CPU also has them.
bool simd_target_allows_avx512();
// The Highway target the library's kernels dispatch to now ("AVX2", ...).
std::string simd_dispatched_target();
// Whether that target is an AVX-512 one (Highway's cached choice: no CPUID per call).
bool simd_dispatches_avx512();
// Who made this CPU (CPUID's vendor string; kOther off x86): choices measured to differ between
// Intel and AMD cores of the same SIMD target take it.
enum class CpuVendor { kIntel, kAmd, kOther };
CpuVendor cpu_vendor();
// The width in bits at which this CPU executes the dispatched target's vectors: the vector
// width, except AVX-512 on AMD family 19h (Zen 4), which runs each 512-bit operation as two
// 256-bit halves. Choices that depend on a kernel's compute time per byte read take it.
int cpu_vector_datapath_bits();
// tileops version string ("0.1.0").
const char* version();

}  // namespace tileops
