// What the hand-written AVX512-BF16 kernels share (dpbf16_kernels.cc, dpbf16_int4_kernels.cc,
// dpbf16_fp8_kernels.cc, dpbf16_dequantize.cc): whether this platform compiles them
// (TILEOPS_DPBF16_CODE), the target attribute of their functions, and a horizontal sum. x86
// intrinsics, not Highway (Highway 1.0 has no target with the instruction); the functions run only
// where dpbf16_enabled() says so.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define TILEOPS_DPBF16_CODE 1
#include <immintrin.h>

#define TILEOPS_DPBF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma")))

// Around the kernels: GCC 12's AVX-512 intrinsics start their results from `__Y = __Y` (an
// undefined register), which its own (maybe-)uninitialized warnings report once inlined; clang
// has no such warning group.
#if defined(__clang__)
#define TILEOPS_DPBF16_WARNINGS_OFF
#define TILEOPS_DPBF16_WARNINGS_ON
#else
#define TILEOPS_DPBF16_WARNINGS_OFF                                                          \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define TILEOPS_DPBF16_WARNINGS_ON _Pragma("GCC diagnostic pop")
#endif

namespace tileops::ops::cpu {

// The sum of v's lanes by halving.
TILEOPS_DPBF16_TARGET inline float dpbf16_sum_lanes(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_cvtss_f32(v);
}

}  // namespace tileops::ops::cpu
#endif
