// tileops tile runtime: the prelude of every kernel the tl cpu backend generates. CMake embeds
// this file's text (runtime_source(), in the build tree) and codegen.cc prepends it to each
// kernel after defining TL_STREAM_BYTES; TL_FAST_MATH and TL_LIBMVEC come from the compile flags
// (compiler.cc) and read as 0 when absent. It uses no standard header so that a kernel compiles in
// a fraction of a second: libm functions are GCC/clang builtins, integer types are spelled out.
// Everything is plain loops over static extents that -O3 vectorises, plus a register-blocked
// matmul. tests/tl/tl_runtime_test.cc compiles it on its own and checks its arithmetic.
#ifndef TILEOPS_TL_RUNTIME_H_
#define TILEOPS_TL_RUNTIME_H_

typedef long long i64;
typedef unsigned long long u64;
typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef unsigned short u16;
typedef int i32;
typedef unsigned int u32;
union TlArg {
  void* p;
  i64 i;
  double f;
};
struct TlRt {
  double (*read)(const void* element, int dtype);
  void (*write)(double value, void* element, int dtype);
  double (*round)(int dtype, double value);
  void (*atomic)(int op, int dtype, void* element, double fvalue, i64 ivalue);
  double (*cast)(double value, int to_dtype, int round_mode);
};
#define TL_INLINE static inline __attribute__((always_inline))
// libm in double precision. With glibc's libmvec (TL_LIBMVEC, linked with -lmvec) loops over
// these calls vectorise; libmvec is accurate to a few double ulps, far below float resolution.
#if TL_LIBMVEC
#define TL_MATH __attribute__((simd("notinbranch"), const, nothrow))
#else
#define TL_MATH __attribute__((const, nothrow))
#endif
extern "C" {
TL_MATH double exp(double);
TL_MATH double exp2(double);
TL_MATH double expm1(double);
TL_MATH double log(double);
TL_MATH double log2(double);
TL_MATH double log1p(double);
TL_MATH double sin(double);
TL_MATH double cos(double);
TL_MATH double tan(double);
TL_MATH double sinh(double);
TL_MATH double cosh(double);
TL_MATH double tanh(double);
TL_MATH double erf(double);
TL_MATH double erfc(double);
TL_MATH double pow(double, double);
}
TL_INLINE u32 tl_fbits(float f) {
  u32 u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}
TL_INLINE float tl_bitsf(u32 u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
TL_INLINE u64 tl_dbits(double d) {
  u64 u;
  __builtin_memcpy(&u, &d, 8);
  return u;
}
TL_INLINE double tl_bitsd(u64 u) {
  double d;
  __builtin_memcpy(&d, &u, 8);
  return d;
}
// float16 <-> float32 (branch-free, round to nearest even; after M. Dukhan's FP16 library).
TL_INLINE float tl_h2f(u16 h) {
  const u32 w = (u32)h << 16, sign = w & 0x80000000u, two_w = w + w;
  const float normalized = tl_bitsf((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = tl_bitsf((two_w >> 17) | (126u << 23)) - 0.5f;
  const u32 r = sign | (two_w < (1u << 27) ? tl_fbits(denormalized) : tl_fbits(normalized));
  return tl_bitsf(r);
}
// float8 codes as floats in integer steps (exact, NaN kept), so that loads of them vectorise: e5m2
// is float16's upper byte; e4m3fn is 1-4-3 with bias 7, subnormals m·2^-9 and NaN at 0x7F/0xFF.
TL_INLINE float tl_e5m2_f(u8 c) { return tl_h2f((u16)((u16)c << 8)); }
TL_INLINE float tl_e4m3_f(u8 c) {
  const u32 sign = (u32)(c & 0x80u) << 24, e = (c >> 3) & 15u, m = c & 7u;
  const float normal = tl_bitsf(sign | ((e + 120u) << 23) | (m << 20));
  const float subnormal = tl_bitsf(sign | tl_fbits((float)m * 0x1.0p-9f));
  const float nan = tl_bitsf(sign | 0x7FC00000u);
  return (c & 0x7Fu) == 0x7Fu ? nan : (e == 0 ? subnormal : normal);
}
// float -> float8 codes in integer steps (branch-free, so that stores and casts vectorise), as
// core/minifloat.cc encodes: to nearest, ties to even; NaN keeps its sign (e5m2 0x7E, e4m3fn
// 0x7F); beyond the largest finite value e5m2 gives inf and e4m3fn saturates to +-448 (inf too).
// Normal results round the float's own bits to the format's mantissa (a carry moves to the next
// binade); below the smallest normal the value is a multiple of the subnormal quantum, scaled to
// an integer exactly (a power of two) and rounded by the FPU.
TL_INLINE u8 tl_f2e5m2(float v) {
  const u32 w = tl_fbits(v), sign = (w >> 24) & 0x80u, a = w & 0x7FFFFFFFu;
  const u32 normal = ((a + 0xFFFFFu + ((a >> 21) & 1u)) >> 21) - ((127u - 15u) << 2);
  const u32 sub = (u32)(i32)__builtin_rintf(tl_bitsf(a) * 0x1.0p16f);  // 0..4 (4: normal)
  u32 code = a < 0x38800000u ? sub : (normal > 0x7Cu ? 0x7Cu : normal);
  code = a > 0x7F800000u ? 0x7Eu : code;
  return (u8)(sign | code);
}
TL_INLINE u8 tl_f2e4m3(float v) {
  const u32 w = tl_fbits(v), sign = (w >> 24) & 0x80u, a = w & 0x7FFFFFFFu;
  const u32 normal = ((a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20) - ((127u - 7u) << 3);
  const u32 sub = (u32)(i32)__builtin_rintf(tl_bitsf(a) * 0x1.0p9f);  // 0..8 (8: normal)
  u32 code = a < 0x3C800000u ? sub : (normal > 0x7Eu ? 0x7Eu : normal);
  code = a > 0x7F800000u ? 0x7Fu : code;
  return (u8)(sign | code);
}
TL_INLINE u16 tl_f2h(float f) {
  float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const u32 w = tl_fbits(f), shl1_w = w + w, sign = w & 0x80000000u;
  u32 bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = tl_bitsf((bias >> 1) + 0x07800000u) + base;
  const u32 bits = tl_fbits(base);
  const u32 nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return (u16)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
// exp in float (Cephes' expf: ln2 split in two, degree-6 polynomial in FMAs, within 2 ulps),
// branch-free so that it vectorises 8-wide; 2^n is applied in two halves so results near the
// ends of the float range (overflow to inf, gradual underflow) come out right. |x| is clamped to
// 104 (beyond, the result is 0 or inf anyway) by an integer min on the magnitude bits: one
// instruction, where a float compare-and-select costs three per side once vectorised. The
// clamp turns NaN into +-104, so NaN lanes take x + x (quieted, as the interpreter's) at the end.
TL_INLINE float tl_expf(float x) {
  const u32 u = tl_fbits(x), mag = u & 0x7FFFFFFFu;
  const float xc = tl_bitsf((mag < 0x42D00000u ? mag : 0x42D00000u) | (u & 0x80000000u));
  const float n = __builtin_rintf(xc * 1.44269504088896341f);
  float r = __builtin_fmaf(n, -0.693359375f, xc);
  r = __builtin_fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = __builtin_fmaf(p, r, 1.3981999507e-3f);
  p = __builtin_fmaf(p, r, 8.3334519073e-3f);
  p = __builtin_fmaf(p, r, 4.1665795894e-2f);
  p = __builtin_fmaf(p, r, 1.6666665459e-1f);
  p = __builtin_fmaf(p, r, 5.0000001201e-1f);
  p = __builtin_fmaf(p, r * r, r) + 1.0f;
  const int ni = (int)n, n1 = ni >> 1, n2 = ni - n1;
  const float e = (p * tl_bitsf((u32)(n1 + 127) << 23)) * tl_bitsf((u32)(n2 + 127) << 23);
  return x != x ? x + x : e;
}
// exp under fast_math (TL_FAST_MATH): within 2 ulps like tl_expf (1.16 ulps measured over all
// 2^32 inputs) wherever the result is at least e^-86.9 (about 2^-125.4); smaller results are 0.
// n is rounded by the magic-number trick (t's low mantissa bits are n + 126, which shifted into
// the exponent give s = 2^(n - 1), normal for n in [-125, 128]) and e^x = 2 s (1 + q), one
// rounding in the fma. About half the operations of tl_expf: no clamp of the magnitude, no
// float-to-int conversion, one scale. NaN propagates through q; x > 88.75 takes 88.75 (inf).
TL_INLINE float tl_expf_fast(float x) {
  const float xc = x > 88.75f ? 88.75f : x, magic = 12583038.0f;  // 1.5 * 2^23 + 126
  const float t = __builtin_fmaf(xc, 1.44269504088896341f, magic), n = t - magic;
  float r = __builtin_fmaf(n, -0.693145751953125f, xc);  // ln2 in two parts: n * part 0 exact
  r = __builtin_fmaf(n, -1.428606765330187045e-6f, r);
  const float r2 = r * r;
  const float c01 = __builtin_fmaf(0.166666671633720397949219f, r, 0.5f);
  const float c23 = __builtin_fmaf(0.00833336077630519866943359f, r, 0.0416664853692054748535156f);
  const float c45 =
      __builtin_fmaf(0.000198527617612853646278381f, r, 0.00139304355252534151077271f);
  const float q = __builtin_fmaf(__builtin_fmaf(__builtin_fmaf(c45, r2, c23), r2, c01), r2, r);
  const float s = tl_bitsf(tl_fbits(t) << 23);
  const float e = __builtin_fmaf(q, s, s) * 2.0f;
  return x < -86.9f ? 0.0f : e;
}
#if TL_FAST_MATH
#define tl_expf tl_expf_fast
#endif
// exp2 under fast_math: within 1 ulp (0.9 measured on [-1/2, 1/2]) wherever the result is at
// least 2^-125; smaller results are 0. x = n + f, |f| <= 1/2, n rounded by the magic-number trick
// as in tl_expf_fast (s = 2^(n - 1), normal for n in [-125, 128]); 2 * 2^f is a degree-6 fit
// (relative error 2e-8 with its float32 coefficients) in Horner's order, whose last step rounds
// once, and the product with s is exact. No range reduction by ln2: 7 multiply-adds where
// tl_expf_fast takes 12, which is why softmax kernels take exp2 of log2e-scaled arguments.
// n is capped at 128 by an unsigned min on t's bits (one integer instruction; a float clamp of x
// took a compare and a select per side): x = inf, NaN or huge then gives s = 2^127 and f = inf,
// NaN or huge, so 2 * 2^f * s is inf, NaN, inf. Otherwise exp2 of the double.
TL_INLINE float tl_exp2f(float x) {
#if TL_FAST_MATH
  const float magic = 12583038.0f;                              // 1.5 * 2^23 + 126
  const u32 tb = tl_fbits(x + magic), cap = 0x4B40007Eu + 128;  // bits of magic, n + 126 <= 254
  const float t = tl_bitsf(tb < cap ? tb : cap), f = x - (t - magic);
  float p = 0.0003069162485189736f;
  p = __builtin_fmaf(p, f, 0.0026799861807376146f);
  p = __builtin_fmaf(p, f, 0.019236978143453598f);
  p = __builtin_fmaf(p, f, 0.11100657284259796f);
  p = __builtin_fmaf(p, f, 0.48045292496681213f);
  p = __builtin_fmaf(p, f, 1.3862943649291992f);
  p = __builtin_fmaf(p, f, 2.0f);
  return x < -125.0f ? 0.0f : p * tl_bitsf(tl_fbits(t) << 23);
#else
  return (float)exp2((double)x);
#endif
}
// gelu(x) = x Phi(x) in float, one branch-free formula for every x (8 lanes at a time), within
// 6 ulps of the interpreter's 0.5 x erfc(-x / sqrt 2) rounded once (tests/tl/
// tl_cpu_agreement_test.cc sweeps every 4099th float32; bench/results/tl-cpu.md has the
// exhaustive check). With a = min(|x|, 16.27): Phi(-a) = e^(-a^2 / 2) R(a), R(a) = N(a) / D(a)
// (degrees 4 / 5, relative error 7e-9 on [0, 16.27], positive coefficients, so Horner in float
// cancels nothing); e^(-a^2 / 2) is a Cody-Waite exp with a^2's rounding error added to the
// reduced argument, scaled by 2^64 so that results down to the subnormal range stay exact, and
// exactly 0 at a = 16.27 (the clamp: -inf gives NaN, x <= -16.27 gives -0, as the interpreter).
// x < 0: (x Phi(-a) 2^64) 2^-64; x >= 0: x (1 - Phi(-a)) (no cancellation either way).
TL_INLINE float tl_gelu_erff(float x) {
  const u32 ab = tl_fbits(x) & 0x7FFFFFFFu;
  const float a = tl_bitsf(ab < 0x418228F6u ? ab : 0x418228F6u);  // NaN and inf give 16.27
  float num = 4.239885392e-03f, den = 1.062772235e-02f;
  num = __builtin_fmaf(num, a, 4.146102772e-02f);
  den = __builtin_fmaf(den, a, 1.039327709e-01f);
  num = __builtin_fmaf(num, a, 1.856824588e-01f);
  den = __builtin_fmaf(den, a, 4.759332860e-01f);
  num = __builtin_fmaf(num, a, 4.415840364e-01f);
  den = __builtin_fmaf(den, a, 1.212645562e+00f);
  num = __builtin_fmaf(num, a, 5.000000036e-01f);
  den = __builtin_fmaf(den, a, 1.681053141e+00f);
  den = __builtin_fmaf(den, a, 1.0f);
  const float a2 = a * a, a2_err = __builtin_fmaf(a, a, -a2);
  // n = round(-a^2 / 2 / ln 2) in the low mantissa bits of tm, biased by 127 + 64.
  const float magic = 12583039.0f + 64.0f;
  const float tm = __builtin_fmaf(a2, -0.72134752044448170f, magic);
  const float n = tm - magic;
  float r = __builtin_fmaf(a2, -0.5f, n * -0.693359375f);  // both products exact
  r = __builtin_fmaf(n, 2.12194440e-4f, r);
  r = __builtin_fmaf(a2_err, -0.5f, r);
  const float r2 = r * r;
  const float c01 = __builtin_fmaf(1.6666665459e-1f, r, 5.0000001201e-1f);
  const float c23 = __builtin_fmaf(8.3334519073e-3f, r, 4.1665795894e-2f);
  const float c45 = __builtin_fmaf(1.9875691500e-4f, r, 1.3981999507e-3f);
  const float c = __builtin_fmaf(__builtin_fmaf(c45, r2, c23), r2, c01);
  const float scale = tl_bitsf(tl_fbits(tm) << 23);                        // 2^(n + 64)
  const float e = __builtin_fmaf(__builtin_fmaf(c, r2, r), scale, scale);  // e^(-a^2/2) 2^64
  const float q = (num / den) * e;                                         // Phi(-a) 2^64
  const bool neg = x < 0.0f;
  const float one_minus = __builtin_fmaf(q, -0x1p-64f, 1.0f);
  return (x * (neg ? q : one_minus)) * (neg ? 0x1p-64f : 1.0f);
}
TL_INLINE float tl_bf2f(u16 h) { return tl_bitsf((u32)h << 16); }
// Round to nearest even; NaN stays NaN (quiet). Branch-free so that loops over it vectorise:
// the NaN test selects, as a mask, between setting the quiet bit and the rounding increment, so
// that one value is shifted and narrowed (a select of the two rounded values narrowed both:
// 9% slower for a bfloat16 rms_norm in cache; the same bits for all 2^32 inputs). fast_math
// keeps the NaN test (no -ffinite-math-only).
TL_INLINE u16 tl_f2bf(float f) {
  const u32 u = tl_fbits(f), nan = (u32)0 - (u32)(f != f);
  return (u16)(((u | (nan & 0x00400000u)) + (~nan & (0x7FFFu + ((u >> 16) & 1u)))) >> 16);
}
#if defined(__AVX2__) && !defined(__AVX512BF16__) && !defined(__clang__)
#define TL_F2BF_AVX2 1
typedef float tl_a8 __attribute__((vector_size(32)));
typedef u32 tl_w8 __attribute__((vector_size(32)));
typedef u16 tl_h16 __attribute__((vector_size(32)));
// The 64 floats at t in v, and whether none is NaN, by one test of their sum (a NaN, or
// infinities of both signs, fail it): it spares tl_f2bf's per-element NaN select, 9 integer
// operations per 8 values where rounding alone takes 4.
TL_INLINE bool tl_load64_nan_free(const float* t, tl_a8 (&v)[8]) {
  typedef long long q4 __attribute__((vector_size(32)));
  __builtin_memcpy(v, t, 256);
  const tl_a8 sum = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
  const q4 nan = (q4)(sum != sum);
  return __builtin_ia32_ptestz256(nan, nan);
}
// Rounded to nearest even at bit 16 (tl_f2bf of a value that is not NaN, in the high half).
TL_INLINE tl_w8 tl_round_high8(tl_a8 v) {
  const tl_w8 u = (tl_w8)v;
  return u + (0x7FFFu + ((u >> 16) & 1u));
}
// 64 floats as tl_f2bf in four vectors of 16; false (nothing written) when they may hold a NaN.
TL_INLINE bool tl_f2bf64_avx2(const float* t, tl_h16* h) {
  tl_a8 v[8];
  if (!tl_load64_nan_free(t, v)) return false;
  for (int i = 0; i < 4; ++i) {
    h[i] = __builtin_shufflevector((tl_h16)tl_round_high8(v[2 * i]),
                                   (tl_h16)tl_round_high8(v[2 * i + 1]), 1, 3, 5, 7, 9, 11, 13, 15,
                                   17, 19, 21, 23, 25, 27, 29, 31);
  }
  return true;
}
#endif
// 64 floats to bfloat16, each as tl_f2bf. AVX512-BF16's conversion rounds to nearest even and
// quiets NaN the same way in one instruction per 16, but reads float32 subnormals as zero: a
// block holding any is converted element by element.
TL_INLINE void tl_f2bf64(u16* dst, const float* t) {
#if defined(__AVX512BF16__) && !defined(__clang__)
  typedef float v16 __attribute__((vector_size(64)));
  v16 v[4];
  __builtin_memcpy(v, t, 256);
  unsigned subnormal = 0;  // vfpclassps, class 0x20: subnormal (one instruction against three)
  for (int i = 0; i < 4; ++i) subnormal |= __builtin_ia32_fpclassps512_mask(v[i], 0x20, 0xFFFF);
  if (subnormal == 0) {
    for (int i = 0; i < 4; ++i) {
      const auto h = __builtin_ia32_cvtneps2bf16_v16sf(v[i]);
      __builtin_memcpy(dst + 16 * i, &h, 32);
    }
    return;
  }
#elif defined(TL_F2BF_AVX2)
  tl_h16 h[4];
  if (tl_f2bf64_avx2(t, h)) {
    __builtin_memcpy(dst, h, 128);
    return;
  }
#endif
  for (int q = 0; q < 64; ++q) dst[q] = tl_f2bf(t[q]);
}
// Row stores of a kernel whose tensors exceed the last-level cache (TL_STREAM_BYTES) bypass it:
// the line is not read before it is overwritten, which saves a third of an elementwise kernel's
// memory traffic. kBytes (a multiple of 64) to a 64-byte aligned `dst`: with AVX-512 64-byte
// stores of registers (32-byte ones went through the stack: gelu 0.43-0.58 of a copy, 0.55-0.66
// with these). The kernel ends with a store fence.
template <int kBytes>
TL_INLINE void tl_stream_bytes(void* dst, const void* v) {
#if defined(__AVX512F__) && !defined(__clang__)
  typedef float v16 __attribute__((vector_size(64)));
  for (int q = 0; q < kBytes; q += 64) {
    v16 x;
    __builtin_memcpy(&x, (const char*)v + q, 64);
    __builtin_ia32_movntps512((float*)((char*)dst + q), x);
  }
#elif defined(__AVX__) && !defined(__clang__)
  typedef float v8 __attribute__((vector_size(32)));
  for (int q = 0; q < kBytes; q += 32) {
    v8 x;
    __builtin_memcpy(&x, (const char*)v + q, 32);
    __builtin_ia32_movntps256((float*)((char*)dst + q), x);
  }
#else
  // Words that may alias anything: `v` is often a u16 array just written, which float loads
  // were free to read before those stores (float16 stores at x86-64-v2 and on Arm came out wrong).
  typedef u32 __attribute__((may_alias)) word;
  for (int q = 0; q < kBytes / 4; ++q) ((word*)dst)[q] = ((const word*)v)[q];
#endif
}
// 64 bfloat16 (kBF16) or float16 values widened to float32 in one go, before a 64-lane loop that
// reads them (the plan's lane_blocks, plan.h): per 16 lanes one masked word permute that puts each
// bfloat16 in the high half of its lane, or one vcvtph2ps (exact, as tl_h2f), where GCC widened
// element by element with a zero extension, a shift and every other time an extract (bfloat16),
// or tl_h2f's integer steps (float16).
template <bool kBF16>
TL_INLINE void tl_widen64(const u16* s, float* d) {
#if defined(__AVX512BW__) && !defined(__clang__)
  typedef short h32 __attribute__((vector_size(64)));
  typedef short h16 __attribute__((vector_size(32)));
  typedef float v16 __attribute__((vector_size(64)));
  for (int i = 0; i < 4; ++i) {
    v16 v;
    if constexpr (kBF16) {
      h32 x;  // lanes 16i .. 16i + 15 are words 16 (i % 2) .. of the 32 loaded at 32 (i / 2)
      __builtin_memcpy(&x, s + 32 * (i / 2), 64);
      const short o = (short)(16 * (i % 2));
      const h32 idx = {
          0, (short)(o + 0),  0, (short)(o + 1),  0, (short)(o + 2),  0, (short)(o + 3),
          0, (short)(o + 4),  0, (short)(o + 5),  0, (short)(o + 6),  0, (short)(o + 7),
          0, (short)(o + 8),  0, (short)(o + 9),  0, (short)(o + 10), 0, (short)(o + 11),
          0, (short)(o + 12), 0, (short)(o + 13), 0, (short)(o + 14), 0, (short)(o + 15)};
      const h32 w = __builtin_ia32_permvarhi512_mask(x, idx, (h32){}, 0xAAAAAAAAu);
      __builtin_memcpy(&v, &w, 64);
    } else {
      h16 x;
      __builtin_memcpy(&x, s + 16 * i, 32);
      v = __builtin_ia32_vcvtph2ps512_mask(x, (v16){}, (unsigned short)0xFFFF, 4);
    }
    __builtin_memcpy(d + 16 * i, &v, 64);
  }
#elif defined(__AVX2__) && defined(__F16C__) && !defined(__clang__)
  // Per 16 lanes: bfloat16 one quadword permute and two word unpacks with zero (in order, where
  // GCC widened each 8 by a zero extension and a shift), float16 two vcvtph2ps.
  typedef short h16 __attribute__((vector_size(32)));
  typedef short h8 __attribute__((vector_size(16)));
  typedef long long q4 __attribute__((vector_size(32)));
  for (int i = 0; i < 4; ++i) {
    if constexpr (kBF16) {
      h16 x;
      __builtin_memcpy(&x, s + 16 * i, 32);
      const h16 ordered = (h16)__builtin_ia32_permdi256((q4)x, 0xD8);  // quadwords 0, 2, 1, 3
      const h16 lo = __builtin_ia32_punpcklwd256((h16){}, ordered);
      const h16 hi = __builtin_ia32_punpckhwd256((h16){}, ordered);
      __builtin_memcpy(d + 16 * i, &lo, 32);
      __builtin_memcpy(d + 16 * i + 8, &hi, 32);
    } else {
      for (int j = 0; j < 2; ++j) {
        h8 x;
        __builtin_memcpy(&x, s + 16 * i + 8 * j, 16);
        const auto v = __builtin_ia32_vcvtph2ps256(x);
        __builtin_memcpy(d + 16 * i + 8 * j, &v, 32);
      }
    }
  }
#else
  for (int q = 0; q < 64; ++q) d[q] = kBF16 ? tl_bf2f(s[q]) : tl_h2f(s[q]);
#endif
}
// 64 floats; 64 16-bit values.
TL_INLINE void tl_stream64(float* dst, const float* v) { tl_stream_bytes<256>(dst, v); }
TL_INLINE void tl_stream64_16(u16* dst, const u16* v) { tl_stream_bytes<128>(dst, v); }
// tl_f2bf64 with streaming stores to a 64-byte aligned `dst`: the converted halves are
// joined in registers, as a 64-byte load of two 32-byte stores would wait for both to retire.
TL_INLINE void tl_f2bf64_stream(u16* dst, const float* t) {
#if defined(__AVX512BF16__) && !defined(__clang__)
  typedef float v16 __attribute__((vector_size(64)));
  typedef short h16 __attribute__((vector_size(32)));
  typedef short h32 __attribute__((vector_size(64)));
  typedef long long q8 __attribute__((vector_size(64)));
  v16 v[4];
  __builtin_memcpy(v, t, 256);
  unsigned subnormal = 0;
  for (int i = 0; i < 4; ++i) subnormal |= __builtin_ia32_fpclassps512_mask(v[i], 0x20, 0xFFFF);
  if (subnormal == 0) {
    for (int i = 0; i < 2; ++i) {
      const auto a = __builtin_ia32_cvtneps2bf16_v16sf(v[2 * i]);
      const auto b = __builtin_ia32_cvtneps2bf16_v16sf(v[2 * i + 1]);
      h16 lo, hi;
      __builtin_memcpy(&lo, &a, 32);
      __builtin_memcpy(&hi, &b, 32);
      const h32 both =
          __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
      q8 bits;
      __builtin_memcpy(&bits, &both, 64);
      __builtin_ia32_movntdq512((q8*)(dst + 32 * i), bits);
    }
    return;
  }
#elif defined(TL_F2BF_AVX2)
  typedef long long q4 __attribute__((vector_size(32)));
  tl_h16 v[4];
  if (tl_f2bf64_avx2(t, v)) {
    for (int i = 0; i < 4; ++i) __builtin_ia32_movntdq256((q4*)(dst + 16 * i), (q4)v[i]);
    return;
  }
#endif
  alignas(64) u16 h[64];
  for (int q = 0; q < 64; ++q) h[q] = tl_f2bf(t[q]);
  tl_stream64_16(dst, h);
}
// kLines lines of the next tile from `p` on (advanced), up to `end`: a prefetch never faults, so
// a wrong extrapolation costs only bandwidth. kLocality 3 (into L1) for the next iteration's
// tile, 2 (L2) for tl::prefetch hints, which name data a later pass reads.
template <int kLines, int kLocality>
TL_INLINE void tl_prefetch_lines(u64& p, u64 end) {
  if (p >= end) return;
  for (int l = 0; l < kLines; ++l) __builtin_prefetch((const char*)(p + 64 * l), 0, kLocality);
  p += 64 * kLines;
}
// The lines of `bytes` from address p on: a row of the next iteration's tile (from the copy of
// this one's) into L2, where it waits a whole iteration without evicting this one's working
// set from L1 (matmul_kmkn_fp32_out at 2048^3: 14-30% less CPU time than into L1); for writing
// (kWrite) the destination row of an atomic tile, into L1, as it is written next.
template <bool kWrite>
TL_INLINE void tl_prefetch_span(u64 p, u64 bytes) {
  for (u64 a = p & ~(u64)63; a < p + bytes; a += 64)
    __builtin_prefetch((const char*)a, kWrite ? 1 : 0, kWrite ? 3 : 2);
}
TL_INLINE void tl_fence() {
#if defined(__SSE__) && !defined(__clang__)
  __builtin_ia32_sfence();
#endif
}
// The bits a bitcast of a 16-bit float tile sees: tl_f2bf(tl_bf2f(u)) and tl_f2h(tl_h2f(h)) (a
// loaded tile holds its values, so a NaN comes back as the conversions return it: quieted, or
// float16's canonical NaN), computed on the bits so that loops over them stay integer.
TL_INLINE u16 tl_bf_bits(u16 u) { return (u16)((u & 0x7FFFu) > 0x7F80u ? (u | 0x0040u) : u); }
TL_INLINE u16 tl_h_bits(u16 h) {
  return (u16)((h & 0x7FFFu) > 0x7C00u ? ((h & 0x8000u) | 0x7E00u) : h);
}
TL_INLINE float tl_round_f16(float f) { return tl_h2f(tl_f2h(f)); }
TL_INLINE float tl_round_bf16(float f) { return tl_bf2f(tl_f2bf(f)); }
// dst[q] = tl_round_bf16(t[q]) for 64 floats (a bfloat16 tile materialised in float32).
TL_INLINE void tl_round_bf16_64(float* dst, const float* t) {
#if defined(TL_F2BF_AVX2)
  tl_a8 v[8];
  if (tl_load64_nan_free(t, v)) {
    for (int i = 0; i < 8; ++i) {
      const tl_w8 r = tl_round_high8(v[i]) & 0xFFFF0000u;
      __builtin_memcpy(dst + 8 * i, &r, 32);
    }
    return;
  }
#endif
  for (int q = 0; q < 64; ++q) dst[q] = tl_round_bf16(t[q]);
}
// Python-style integer floor division and modulo; division by zero gives 0 (no trap).
TL_INLINE i64 tl_floordiv(i64 a, i64 b) {
  if (b == 0) return 0;
  if (b == -1) return (i64)(0 - (u64)a);
  const i64 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TL_INLINE i64 tl_mod(i64 a, i64 b) {
  if (b == 0 || b == -1) return 0;
  const i64 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TL_INLINE double tl_fmod_py(double a, double b) {
  const double r = __builtin_fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
TL_INLINE i64 tl_shl(i64 a, i64 b, int bits) {
  return (b < 0 || b >= bits) ? 0 : (i64)((u64)a << b);
}
TL_INLINE i64 tl_shr(i64 a, i64 b, int bits) {
  return (b < 0 || b >= bits) ? (a < 0 ? -1 : 0) : (a >> b);
}
// maximum/minimum as the interpreter's glibc fmax/fmin: NaN if either is NaN, the first operand
// on a tie (+0 and -0 included; the instructions vmaxps/vminps return the second).
TL_INLINE double tl_fmax(double a, double b) {
  return (a != a || b != b) ? __builtin_nan("") : (a >= b ? a : b);
}
TL_INLINE double tl_fmin(double a, double b) {
  return (a != a || b != b) ? __builtin_nan("") : (a <= b ? a : b);
}
TL_INLINE float tl_fmaxf(float a, float b) {
  return (a != a || b != b) ? __builtin_nanf("") : (a >= b ? a : b);
}
TL_INLINE float tl_fminf(float a, float b) {
  return (a != a || b != b) ? __builtin_nanf("") : (a <= b ? a : b);
}
TL_INLINE double tl_relu(double x) { return x > 0 ? x : (x != x ? x : 0.0); }
// gelu's tanh form, 0.5 x (1 + tanh u), as x m / (1 + m) (u < 0) or x / (1 + m) with
// m = e^(-2 |u|): no cancellation in 1 + tanh u for x below about -5.5, and no overflow.
TL_INLINE double tl_gelu_tanh(double x) {
  const double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  const double m = exp(-2.0 * __builtin_fabs(u));
  return x * (u < 0 ? m : 1.0) / (1.0 + m);
}
TL_INLINE float tl_reluf(float x) { return x > 0 ? x : (x != x ? x : 0.0f); }
// Float to integer conversion as the interpreter does it: NaN -> 0, saturating to int64.
TL_INLINE i64 tl_f2i(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18) return (i64)0x7FFFFFFFFFFFFFFFll;
  if (v <= -9.2233720368547758e18) return (i64)(-0x7FFFFFFFFFFFFFFFll - 1);
  return (i64)v;
}
// Integer to float: an integer's zero is +0. GCC 12 (-fno-trapping-math) folds float -> int64 ->
// float into the float rounding alone, which keeps -0.3's sign (-0, then rsqrt gives -inf),
// and drops a + 0 after the conversion as an identity, but keeps this select.
TL_INLINE float tl_i2f(i64 i) {
  const float f = (float)i;
  return f == 0 ? 0.0f : f;
}
TL_INLINE double tl_i2d(i64 i) {
  const double f = (double)i;
  return f == 0 ? 0.0 : f;
}
// Iterations of for (i = start; step > 0 ? i < stop : i > stop; i += step), Python's range
// (step 0: none), without overflow.
TL_INLINE u64 tl_trip_count(i64 start, i64 stop, i64 step) {
  if (step > 0) return start < stop ? ((u64)stop - (u64)start - 1) / (u64)step + 1 : 0;
  if (step < 0) return start > stop ? ((u64)start - (u64)stop - 1) / ((u64)0 - (u64)step) + 1 : 0;
  return 0;
}
// where(c, a, b): both values are computed before the choice (no conditional memory read).
template <typename T>
TL_INLINE T tl_where(u8 c, T a, T b) {
  return c ? a : b;
}
TL_INLINE i64 tl_clamp(i64 v, i64 lo, i64 hi) { return v < lo ? lo : (v > hi ? hi : v); }
// The columns [lo, hi) of a row of `width` at column offset `off` that lie in [0, extent), exact
// for every int64 off and extent >= 0: no sum that could overflow is formed (-off for off = -2^63
// and extent - off for off < 0 would).
TL_INLINE i64 tl_col_lo(i64 off, i64 width) { return off >= 0 ? 0 : (off > -width ? -off : width); }
TL_INLINE i64 tl_col_hi(i64 off, i64 extent, i64 lo, i64 width) {
  i64 n;
  if (__builtin_sub_overflow(extent, off, &n)) n = width;  // off < 0: more than width columns
  return tl_clamp(n, lo, width);
}
// Whether a tensor of `rank` extents d and strides s (elements of es bytes) has its byte count and
// the bytes its strides reach within int64, so that the address of every element it holds is
// computed exactly (an empty tensor holds none).
TL_INLINE bool tl_geometry_ok(i64 es, int rank, const i64* d, const i64* s) {
  for (int i = 0; i < rank; ++i) {
    if (d[i] == 0) return true;
  }
  i64 bytes = es, below = 0, above = es;
  for (int i = 0; i < rank; ++i) {
    i64 span;
    if (__builtin_mul_overflow(bytes, d[i], &bytes) ||
        __builtin_mul_overflow(d[i] - 1, s[i], &span) || __builtin_mul_overflow(span, es, &span) ||
        __builtin_add_overflow(span < 0 ? below : above, span, span < 0 ? &below : &above))
      return false;
  }
  return true;
}
// max (or min) with NaN propagation; ties keep the earlier element like the interpreter. Two
// selects (maxss's own rule, then a NaN v), which the compiler keeps branch-free: one condition
// of both tests became compare-and-branch chains (a column max of a few columns, decode's
// scores: 40% of its time).
template <bool kMax, typename T>
TL_INLINE T tl_better(T m, T v) {
  const T r = (kMax ? v > m : v < m) ? v : m;
  return v != v ? v : r;
}
// Row reductions in explicit vectors (the loop vectoriser does not reliably keep double
// accumulators or NaN-aware maxima in registers). Sums: lane q of the eight double accumulators
// takes elements q, q + 8, ... of a run; `t` holds the next 8 (16, 64) elements. Written for 16
// float lanes: the same results on every target.
typedef float tl_v8 __attribute__((vector_size(32)));
typedef float tl_v16 __attribute__((vector_size(64)));
// What loops carry is held as the target's registers hold it: 16 floats (tl_f16) or 8 doubles
// (tl_d8) as one zmm with AVX-512, two ymm with AVX, four xmm otherwise. GCC keeps a generic
// vector wider than the registers on the stack between loop steps and compares or selects it
// one lane at a time (on AVX2 a 16-lane max step took 16 vcomiss and store-forwarding stalls:
// the float32 softmax's row max ran 3x slower than the native kernel's).
#if defined(__AVX512F__)
#define TL_REG_BYTES 64
#elif defined(__AVX__)
#define TL_REG_BYTES 32
#else
#define TL_REG_BYTES 16
#endif
typedef float tl_rf __attribute__((vector_size(TL_REG_BYTES)));
typedef double tl_rd __attribute__((vector_size(TL_REG_BYTES)));
typedef float tl_rh __attribute__((vector_size(TL_REG_BYTES / 2)));  // widens to one tl_rd
constexpr int kTlRegs = 64 / TL_REG_BYTES, kTlRegFloats = TL_REG_BYTES / 4;
struct tl_f16 {
  tl_rf r[kTlRegs];
};
struct tl_d8 {
  tl_rd r[kTlRegs];
};
TL_INLINE tl_f16 tl_fill16(float x) {
  tl_f16 f;
  for (int i = 0; i < kTlRegs; ++i)
    for (int l = 0; l < kTlRegFloats; ++l) f.r[i][l] = x;
  return f;
}
TL_INLINE void tl_add(tl_d8& acc, const tl_d8& d) {
  for (int i = 0; i < kTlRegs; ++i) acc.r[i] += d.r[i];
}
// lo + hi lane by lane into a.
TL_INLINE void tl_lanes(const tl_d8& lo, const tl_d8& hi, double* a) {
  for (int i = 0; i < kTlRegs; ++i) {
    const tl_rd s = lo.r[i] + hi.r[i];
    __builtin_memcpy(a + i * (TL_REG_BYTES / 8), &s, TL_REG_BYTES);
  }
}
// 8 floats to doubles: one vcvtps2pd with AVX-512 (GCC 12 converts a vector in 4-lane halves,
// with a shuffle to split and another to join: the row sums of 16-bit rows were bound by them),
// one per register otherwise.
TL_INLINE tl_d8 tl_widen8(tl_v8 a) {
  tl_d8 d;
#if TL_REG_BYTES == 64 && !defined(__clang__)
  d.r[0] = __builtin_ia32_cvtps2pd512_mask(a, (tl_rd){}, (unsigned char)0xFF, 4);
#else
  for (int i = 0; i < kTlRegs; ++i) {
    tl_rh h;
    __builtin_memcpy(&h, (const char*)&a + i * (TL_REG_BYTES / 2), TL_REG_BYTES / 2);
    d.r[i] = __builtin_convertvector(h, tl_rd);
  }
#endif
  return d;
}
TL_INLINE void tl_acc8(tl_d8& acc, const float* t) {
  tl_v8 a;
  __builtin_memcpy(&a, t, 32);
  tl_add(acc, tl_widen8(a));
}
// Two accumulators (lo: elements 16m + q, hi: 16m + 8 + q), so that consecutive steps do not
// wait for each other's additions. `t` is read as one 16-lane vector: GCC then keeps the
// caller's 16 values in a register (two 8-lane reads of it went through the stack).
TL_INLINE void tl_acc16(tl_d8& lo, tl_d8& hi, const float* t) {
  tl_v16 v;
  __builtin_memcpy(&v, t, 64);
  tl_add(lo, tl_widen8(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)));
  tl_add(hi, tl_widen8(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)));
}
// Sums of terms known to be non-negative (exp, exp2) add each block of 64 in float32 first:
// lane q sums elements q, q + 8, ..., q + 56 as a tree of depth 3, so each block partial is
// within 3 float32 roundings (relative 3 * 2^-24: no cancellation) of its exact sum, and only
// the partials are widened: 7 float additions per 64 elements and one conversion.
TL_INLINE void tl_acc64(tl_d8& acc, const float* t) {
  tl_v16 v[4];
  __builtin_memcpy(v, t, 256);
  const tl_v16 s = (v[0] + v[1]) + (v[2] + v[3]);
  const tl_v8 h = __builtin_shufflevector(s, s, 0, 1, 2, 3, 4, 5, 6, 7) +
                  __builtin_shufflevector(s, s, 8, 9, 10, 11, 12, 13, 14, 15);
  tl_add(acc, tl_widen8(h));
}
// Any other terms, 64 at a time: four tl_acc16 steps (the loop producing the 64 terms
// vectorises better than one producing 16).
TL_INLINE void tl_acc64_exact(tl_d8& lo, tl_d8& hi, const float* t) {
  for (int i = 0; i < 4; ++i) tl_acc16(lo, hi, t + 16 * i);
}
// Under fast_math, the float32 accumulators f widened into `lo` (and cleared).
TL_INLINE void tl_sum_flush(tl_f16* f, tl_d8& lo) {
#if TL_FAST_MATH
  float t[64];
  __builtin_memcpy(t, f, 256);
  tl_acc64(lo, t);
  for (int i = 0; i < 4; ++i) f[i] = tl_f16{};
#else
  (void)f, (void)lo;
#endif
}
// The block of 64 terms t at offset k of a sum. Under fast_math, any sum adds it into four
// float32 vectors (lane q of f[i] takes elements 16i + q + 64j: one addition per 16 terms and no
// chain through the block), flushed into `lo` every 1024 terms (16 per lane) and by the caller
// at the end. Otherwise tl_acc64 for non-negative terms (exp, exp2), else tl_acc64_exact: the
// double sum that keeps rms_norm's sum of squares agreeing with the interpreter.
template <bool kNonNegative>
TL_INLINE void tl_sum64(tl_f16* f, tl_d8& lo, tl_d8& hi, const float* t, i64 k) {
#if TL_FAST_MATH
  (void)hi;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < kTlRegs; ++j) {
      tl_rf v;
      __builtin_memcpy(&v, t + 16 * i + kTlRegFloats * j, TL_REG_BYTES);
      f[i].r[j] += v;
    }
  }
  if ((k & 1023) == 1024 - 64) tl_sum_flush(f, lo);
#else
  (void)f, (void)k;
  if constexpr (kNonNegative)
    tl_acc64(lo, t);
  else
    tl_acc64_exact(lo, hi, t);
#endif
}
// Max (min) accumulators over runs of 32: lane q of m takes elements 16j + q + 32i.
template <bool kMax>
TL_INLINE tl_f16 tl_better16(tl_f16 m, const float* t) {
  for (int i = 0; i < kTlRegs; ++i) {
    tl_rf v;
    __builtin_memcpy(&v, t + kTlRegFloats * i, TL_REG_BYTES);
    m.r[i] = ((kMax ? v > m.r[i] : v < m.r[i]) | (v != v)) ? v : m.r[i];
  }
  return m;
}
// tl_better16 for inputs without NaN: one maxps (minps), which keeps m on ties as tl_better16
// does. The caller adds the same elements into a probe and, if it ends NaN (a NaN input, or
// infinities of both signs), runs the exact loop instead: the compare-and-select chain of
// tl_better16 costs five instructions per vector against one.
template <bool kMax>
TL_INLINE tl_f16 tl_plain16(tl_f16 m, const float* t, tl_f16& probe) {
  for (int i = 0; i < kTlRegs; ++i) {
    tl_rf v;
    __builtin_memcpy(&v, t + kTlRegFloats * i, TL_REG_BYTES);
    probe.r[i] += v;
    m.r[i] = (kMax ? v > m.r[i] : v < m.r[i]) ? v : m.r[i];
  }
  return m;
}
// Whether a + b holds a NaN in any lane.
TL_INLINE bool tl_has_nan16(const tl_f16& a, const tl_f16& b) {
  bool nan = false;
  for (int i = 0; i < kTlRegs; ++i) {
    const tl_rf s = a.r[i] + b.r[i];
    for (int l = 0; l < kTlRegFloats; ++l) nan |= s[l] != s[l];
  }
  return nan;
}
// The result of N max (or min) accumulators: NaN if any holds one, ties keep the earlier.
template <bool kMax, int N, typename T>
TL_INLINE T tl_merge(const T* m) {
  T r = m[0];
  for (int j = 1; j < N; ++j) {
    if (m[j] != m[j] || r != r)
      r = (r != r) ? r : m[j];
    else
      r = tl_better<kMax>(r, m[j]);
  }
  return r;
}
// dst[C][R] = src[R][C] transposed, 4-byte elements, R and C multiples of 8: 8 x 8 blocks in
// three rounds of shuffles (32-bit pairs, 64-bit pairs, 128-bit halves), 24 per 64 elements where
// the element loop moved each one on its own (a strided read per element).
template <i64 R, i64 C>
TL_INLINE void tl_transpose8(void* dst, const void* src) {
  typedef u32 v8 __attribute__((vector_size(32)));
  const char* const s = (const char*)src;
  char* const d = (char*)dst;
  for (i64 i = 0; i < R; i += 8) {
    for (i64 j = 0; j < C; j += 8) {
      v8 r[8], t[8], u[8];
      for (int k = 0; k < 8; ++k) __builtin_memcpy(&r[k], s + 4 * ((i + k) * C + j), 32);
      for (int k = 0; k < 8; k += 2) {
        t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
      }
      for (int k = 0; k < 8; k += 4) {
        for (int h = 0; h < 2; ++h) {
          u[k + 2 * h] = __builtin_shufflevector(t[k + h], t[k + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
          u[k + 2 * h + 1] =
              __builtin_shufflevector(t[k + h], t[k + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
      }
      for (int k = 0; k < 4; ++k) {  // column k from u[k] and u[k + 4], column k + 4 likewise
        const v8 lo = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        const v8 hi = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
        __builtin_memcpy(d + 4 * ((j + k) * R + i), &lo, 32);
        __builtin_memcpy(d + 4 * ((j + k + 4) * R + i), &hi, 32);
      }
    }
  }
}
// C[M][N] += A[M][K] * B[K][N], all row-major, float accumulation (double for double inputs).
// Register-blocked: 6 rows x 2 vectors of C per step, 8-lane vectors; with AVX-512 (GCC),
// 6 x 4 16-lane vectors (24 of the 32 registers) when N is a multiple of 64, 6 x 2 when of 32.
typedef float tl_v8f __attribute__((vector_size(32), aligned(4), may_alias));
TL_INLINE tl_v8f tl_fma(tl_v8f acc, tl_v8f b, float s) {
#if defined(__FMA__) && defined(__AVX__)
  return __builtin_ia32_vfmaddps256(b, (tl_v8f){s, s, s, s, s, s, s, s}, acc);
#else
  return acc + b * s;
#endif
}
#if defined(__AVX512F__) && !defined(__clang__)
#define TL_MM16 1
typedef float tl_v16f __attribute__((vector_size(64), aligned(4), may_alias));
TL_INLINE tl_v16f tl_fma(tl_v16f acc, tl_v16f b, float s) {
  // {s, ...}, not {} + s: 0 + s is not s for s = -0, so that costs an addition per broadcast.
  const tl_v16f sv = {s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s};
  return __builtin_ia32_vfmaddps512_mask(b, sv, acc, (unsigned short)0xFFFF, 4);
}
#else
#define TL_MM16 0
#endif
// Element (i, p) of the left operand: A's rows are lda apart (a tile read in place from a
// row-major tensor at the tensor's row stride, or a copied one: lda = K); kTransA: A is held
// transposed, [K][M] with its k rows lda apart (xᵀ of a loaded [K, M] tile, never materialised).
template <bool kTransA, typename T>
TL_INLINE T tl_a_at(const T* a, i64 lda, i64 i, i64 p) {
  return kTransA ? a[p * lda + i] : a[i * lda + p];
}
// R rows x V vectors of C (W lanes each), all of K: R * V accumulators in registers, each B row
// loaded once per V * W columns, each A element broadcast once per V FMAs. A's elements as
// tl_a_at reads them (kTransA: held transposed) and B's rows ldb apart: a tile read in place from
// a row-major tensor (the tensor's row stride) or a copied one (lda = K, ldb = N; B's rows then
// start anywhere: loaded unaligned).
template <typename Vec, int W, int V, int R, i64 N, i64 K, bool kTransA>
TL_INLINE void tl_mm_block(float* __restrict c, const float* __restrict a,
                           const float* __restrict b, i64 lda, i64 ldb, i64 i, i64 j) {
  Vec acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = *(const Vec*)(c + (i + r) * N + j + v * W);
  for (i64 p = 0; p < K; ++p) {
    Vec bv[V];
    for (int v = 0; v < V; ++v) __builtin_memcpy(&bv[v], b + p * ldb + j + v * W, sizeof(Vec));
    for (int r = 0; r < R; ++r) {
      const float s = tl_a_at<kTransA>(a, lda, i + r, p);
      for (int v = 0; v < V; ++v) acc[r][v] = tl_fma(acc[r][v], bv[v], s);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) *(Vec*)(c + (i + r) * N + j + v * W) = acc[r][v];
}
// Column strips of V * W, rows in blocks of 6 (6 V accumulators), then 2, then 1.
template <typename Vec, int W, int V, i64 M, i64 N, i64 K, bool kTransA>
TL_INLINE void tl_mm_blocks(float* __restrict c, const float* __restrict a,
                            const float* __restrict b, i64 lda, i64 ldb) {
  for (i64 j = 0; j < N; j += V * W) {
    i64 i = 0;
    for (; i + 6 <= M; i += 6) tl_mm_block<Vec, W, V, 6, N, K, kTransA>(c, a, b, lda, ldb, i, j);
    for (; i + 2 <= M; i += 2) tl_mm_block<Vec, W, V, 2, N, K, kTransA>(c, a, b, lda, ldb, i, j);
    for (; i < M; ++i) tl_mm_block<Vec, W, V, 1, N, K, kTransA>(c, a, b, lda, ldb, i, j);
  }
}
// C[M][N] += A B for a narrow B (N < 16: decode's scores against a few query rows, where the
// blocked kernels have no whole vector of columns): each element of C is a dot product of A's row
// with B's column (B transposed once), W lanes of k at a time in N accumulators, each summed
// across its lanes as a tree, k's tail and C's value added last. float32 FMAs like the blocked
// kernels, in another order (within the same dot-product tolerance).
TL_INLINE tl_v8f tl_fmav(tl_v8f acc, tl_v8f a, tl_v8f b) {
#if defined(__FMA__) && defined(__AVX__)
  return __builtin_ia32_vfmaddps256(a, b, acc);
#else
  return acc + a * b;
#endif
}
TL_INLINE float tl_hsum(tl_v8f v) {
  typedef float v4 __attribute__((vector_size(16)));
  const v4 h =
      __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
  const v4 q = h + __builtin_shufflevector(h, h, 2, 3, 0, 1);
  return q[0] + q[1];
}
#if TL_MM16
TL_INLINE tl_v16f tl_fmav(tl_v16f acc, tl_v16f a, tl_v16f b) {
  return __builtin_ia32_vfmaddps512_mask(a, b, acc, (unsigned short)0xFFFF, 4);
}
TL_INLINE float tl_hsum(tl_v16f v) {
  return tl_hsum((tl_v8f)__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                 (tl_v8f)__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}
#endif
template <typename Vec, int W, i64 M, i64 N, i64 K>
TL_INLINE void tl_mm_narrow(float* __restrict c, const float* __restrict a,
                            const float* __restrict b, i64 lda, i64 ldb) {
  alignas(64) float bt[N * K];
  for (i64 p = 0; p < K; ++p)
    for (i64 j = 0; j < N; ++j) bt[j * K + p] = b[p * ldb + j];
  constexpr i64 KV = K / W * W;
  for (i64 i = 0; i < M; ++i) {
    Vec acc[N];
    for (i64 j = 0; j < N; ++j) acc[j] = (Vec){};
    for (i64 p = 0; p < KV; p += W) {
      // memcpy: a template argument drops the typedef's aligned(4), and rows start anywhere.
      Vec av, bv;
      __builtin_memcpy(&av, a + i * lda + p, sizeof(Vec));
      for (i64 j = 0; j < N; ++j) {
        __builtin_memcpy(&bv, bt + j * K + p, sizeof(Vec));
        acc[j] = tl_fmav(acc[j], av, bv);
      }
    }
    for (i64 j = 0; j < N; ++j) {
      float s = tl_hsum(acc[j]);
      for (i64 p = KV; p < K; ++p) s = __builtin_fmaf(a[i * lda + p], bt[j * K + p], s);
      c[i * N + j] += s;
    }
  }
}
// The float32 kernels (and the scalar loop of any other compute type). kTransA: `a` holds A
// transposed (tl_a_at), which only the blocked kernels read as it lies.
template <i64 M, i64 N, i64 K, bool kTransA, typename T>
static void tl_matmul_float(float* __restrict c, const T* __restrict a, const T* __restrict b,
                            i64 lda, i64 ldb) {
#if TL_MM16
  if constexpr (sizeof(T) == 4 && N % 64 == 0) {
    tl_mm_blocks<tl_v16f, 16, 4, M, N, K, kTransA>(c, (const float*)a, (const float*)b, lda, ldb);
    return;
  }
  if constexpr (sizeof(T) == 4 && N % 32 == 0) {
    tl_mm_blocks<tl_v16f, 16, 2, M, N, K, kTransA>(c, (const float*)a, (const float*)b, lda, ldb);
    return;
  }
#endif
  if constexpr (sizeof(T) == 4 && N % 16 == 0) {
    tl_mm_blocks<tl_v8f, 8, 2, M, N, K, kTransA>(c, (const float*)a, (const float*)b, lda, ldb);
  } else if constexpr (kTransA) {  // the other kernels read A's rows along k: untranspose it
    // (codegen counts this array as the transpose's tile: codegen_layout.cc)
    alignas(64) T at[M * K];
    for (i64 p = 0; p < K; ++p)
      for (i64 i = 0; i < M; ++i) at[i * K + p] = a[p * lda + i];
    tl_matmul_float<M, N, K, false>(c, at, b, K, ldb);
  } else if constexpr (sizeof(T) == 4 && N < 16 && K >= 16) {
#if TL_MM16
    tl_mm_narrow<tl_v16f, 16, M, N, K>(c, (const float*)a, (const float*)b, lda, ldb);
#else
    tl_mm_narrow<tl_v8f, 8, M, N, K>(c, (const float*)a, (const float*)b, lda, ldb);
#endif
  } else {
    for (i64 i = 0; i < M; ++i) {
      for (i64 p = 0; p < K; ++p) {
        const auto s = a[i * lda + p];
        for (i64 j = 0; j < N; ++j) c[i * N + j] += s * b[p * ldb + j];
      }
    }
  }
}

// bfloat16 operands with AVX512-BF16 (chosen by the target: __AVX512BF16__): VDPBF16PS, one
// instruction per 16 columns and pair of k, where the float32 kernel takes two FMAs. A tile holds
// bfloat16 values either as floats (codegen's compute type) or as their bits (u16: a tile loaded
// for the matmul alone, plan.h's `bits`). A's rows of k-pairs are the bits themselves when A is
// held as bits with an even K and row stride (read where they lie, one 32-bit pair broadcast from
// memory per step: {1to16}), else narrowed exactly into a copy (a float's high half); B's row
// pairs are interleaved, [k / 2][N] pairs of (b[2p][j], b[2p + 1][j]); an odd K pads a zero pair
// half. Rounding against the float32 kernel: every product of two bfloat16 is exact in float32
// either way; the instruction adds the two products of a pair to the accumulator (two float32
// roundings per pair, as two FMAs), but it ignores MXCSR: subnormal inputs (operands and
// accumulator) read as zero and subnormal results are flushed to zero (docs/tile-language.md;
// tl_cpu_matmul_test checks both the agreement and the flush). Inline assembly: GCC 12 and 13
// spell the builtin's bfloat16 vector type differently.
// The 16 bits of a bfloat16 value held as a float (its low 16 bits are zero, NaN included:
// tl_f2bf quiets and truncates) or as its bits.
TL_INLINE u32 tl_bf16_bits(float f) { return tl_fbits(f) >> 16; }
TL_INLINE u32 tl_bf16_bits(u16 h) { return h; }
#if TL_MM16 && defined(__AVX512BF16__)
#define TL_MM_BF16 1
typedef u32 __attribute__((may_alias, aligned(2))) tl_pair;
TL_INLINE tl_v16f tl_dpbf16(tl_v16f acc, tl_v16f b, const tl_pair* a) {
  __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(b), "m"(*a));
  return acc;
}
// R rows x V vectors of C over P pairs of k; `a` rows of P pairs, `apr` pairs apart; `b` [P][N].
template <int V, int R, i64 N, i64 P>
TL_INLINE void tl_mm_block_bf16(float* __restrict c, const tl_pair* __restrict a, i64 apr,
                                const u32* __restrict b, i64 i, i64 j) {
  tl_v16f acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = *(const tl_v16f*)(c + (i + r) * N + j + v * 16);
  const tl_pair* row[R];  // each row's pairs: one base register per row, indexed by p
  for (int r = 0; r < R; ++r) row[r] = a + (i + r) * apr;
  for (i64 p = 0; p < P; ++p) {
    tl_v16f bv[V];
    for (int v = 0; v < V; ++v) bv[v] = *(const tl_v16f*)(b + p * N + j + v * 16);
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v) acc[r][v] = tl_dpbf16(acc[r][v], bv[v], row[r] + p);
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) *(tl_v16f*)(c + (i + r) * N + j + v * 16) = acc[r][v];
}
// Column strips of 16 V, rows in blocks of 6, then 2, then 1 (`apr`: a constant where inlined
// with one, so that the row addresses fold).
template <i64 M, i64 N, i64 P>
TL_INLINE void tl_mm_blocks_bf16(float* __restrict c, const tl_pair* __restrict ap, i64 apr,
                                 const u32* __restrict bp) {
  constexpr int V = N % 64 == 0 ? 4 : N % 32 == 0 ? 2 : 1;
  for (i64 j = 0; j < N; j += 16 * V) {
    i64 i = 0;
    for (; i + 6 <= M; i += 6) tl_mm_block_bf16<V, 6, N, P>(c, ap, apr, bp, i, j);
    for (; i + 2 <= M; i += 2) tl_mm_block_bf16<V, 2, N, P>(c, ap, apr, bp, i, j);
    for (; i < M; ++i) tl_mm_block_bf16<V, 1, N, P>(c, ap, apr, bp, i, j);
  }
}
// kTransA: `a` holds A transposed (tl_a_at), always as floats (a transposed tile is no bits).
template <i64 M, i64 N, i64 K, bool kTransA, typename TA, typename TB>
static void tl_matmul_acc_bf16(float* __restrict c, const TA* __restrict a, const TB* __restrict b,
                               i64 lda, i64 ldb) {
  constexpr i64 P = (K + 1) / 2;
  constexpr bool kABits = sizeof(TA) == 2 && !kTransA;
  alignas(64) u32 bp[P * N];
  for (i64 p = 0; p < K / 2; ++p)
    for (i64 j = 0; j < N; ++j)
      bp[p * N + j] = tl_bf16_bits(b[2 * p * ldb + j]) | tl_bf16_bits(b[(2 * p + 1) * ldb + j])
                                                             << 16;
  if (K % 2 != 0)
    for (i64 j = 0; j < N; ++j) bp[(P - 1) * N + j] = tl_bf16_bits(b[(K - 1) * ldb + j]);
  if (kABits && K % 2 == 0 && lda % 2 == 0) {  // A's rows are already k-pairs
    tl_mm_blocks_bf16<M, N, P>(c, (const tl_pair*)a, lda / 2, bp);
    return;
  }
  alignas(64) u16 ah[M * 2 * P];
  for (i64 i = 0; i < M; ++i) {
    for (i64 q = 0; q < K; ++q)
      ah[i * 2 * P + q] = (u16)tl_bf16_bits(tl_a_at<kTransA>(a, lda, i, q));
    if (K % 2 != 0) ah[i * 2 * P + K] = 0;
  }
  tl_mm_blocks_bf16<M, N, P>(c, (const tl_pair*)ah, P, bp);
}
#else
#define TL_MM_BF16 0
#endif
// kBF16: both operands are bfloat16 tiles, each held as floats or as its bits (u16). kTransA:
// `a` holds A transposed (tl_a_at): xᵀ of a [K, M] tile, never materialised, held as floats.
template <i64 M, i64 N, i64 K, bool kBF16 = false, bool kTransA = false, typename TA, typename TB>
static void tl_matmul_acc(float* __restrict c, const TA* __restrict a, const TB* __restrict b,
                          i64 lda, i64 ldb) {
#if TL_MM_BF16
  // The packed operands live on the stack, beyond the tiles codegen counts (codegen.cc's
  // kStackBudget leaves half the stack to callers): up to 256 KiB (a 256 x 256 x 256 product);
  // larger ones take the float32 kernel. So do products of fewer than 16 rows: packing B costs
  // about as much as the FMAs it saves (decode's P·V of 4 query rows: 0.24 -> 0.30 of native).
  if constexpr (kBF16 && N % 16 == 0 && M >= 16 && (M + N) * ((K + 1) / 2) <= 65536) {
    tl_matmul_acc_bf16<M, N, K, kTransA>(c, a, b, lda, ldb);
    return;
  }
#endif
  // bfloat16 bits for the float32 kernels: widened into floats first (codegen counts these
  // arrays on the stack as the tiles they stand for).
  if constexpr (sizeof(TA) == 2) {
    alignas(64) float aw[M * K];
    for (i64 i = 0; i < M; ++i)
      for (i64 q = 0; q < K; ++q) aw[i * K + q] = tl_bf2f(tl_a_at<kTransA>(a, lda, i, q));
    tl_matmul_acc<M, N, K, false>(c, aw, b, K, ldb);
  } else if constexpr (sizeof(TB) == 2) {
    alignas(64) float bw[K * N];
    for (i64 q = 0; q < K; ++q)
      for (i64 j = 0; j < N; ++j) bw[q * N + j] = tl_bf2f(b[q * ldb + j]);
    tl_matmul_acc<M, N, K, false, kTransA>(c, a, bw, lda, N);
  } else {
    tl_matmul_float<M, N, K, kTransA>(c, a, b, lda, ldb);
  }
}
// The byte code of an 8-bit float value (already on its grid) and back (bitcasts).
TL_INLINE u8 tl_f8_code(const TlRt* rt, float v, int dtype) {
  u8 code = 0;
  rt->write(v, &code, dtype);
  return code;
}
TL_INLINE float tl_f8_value(const TlRt* rt, u8 code, int dtype) {
  return (float)rt->read(&code, dtype);
}

// Atomic additions inline (a compare-and-swap loop on the float's bits; integers wrap), where
// the runtime's atomic takes a lock per element: float32 totals from many blocks are the common
// case. The sum is float32's correctly rounded one, as the runtime's (a double sum, rounded).
TL_INLINE void tl_atomic_add_f32(float* p, float v) {
  u32 old = __atomic_load_n((u32*)p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n((u32*)p, &old, tl_fbits(tl_bitsf(old) + v), true,
                                      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
  }
}
TL_INLINE void tl_atomic_add_i32(i32* p, i64 v) {
  __atomic_fetch_add((u32*)p, (u32)(u64)v, __ATOMIC_ACQ_REL);
}
TL_INLINE void tl_atomic_add_i64(i64* p, i64 v) {
  __atomic_fetch_add((u64*)p, (u64)v, __ATOMIC_ACQ_REL);
}

// Sort keys: unsigned integers in the order tl::sort defines (NaN above +inf, -0.0 == 0.0), from
// the bits alone so that fast-math cannot fold the NaN and zero tests away.
TL_INLINE u32 tl_sort_key_f(float v) {
  u32 b = tl_fbits(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;
  if ((b & 0x7FFFFFFFu) == 0) b = 0;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
TL_INLINE u64 tl_sort_key_d(double v) {
  u64 b = tl_dbits(v);
  const u64 sign = 0x8000000000000000ull;
  if ((b & ~sign) > 0x7FF0000000000000ull) return ~0ull;
  if ((b & ~sign) == 0) b = 0;
  return (b & sign) ? ~b : (b | sign);
}
TL_INLINE u32 tl_sort_key_i(i32 v) { return (u32)v ^ 0x80000000u; }
TL_INLINE u64 tl_sort_key_l(i64 v) { return (u64)v ^ 0x8000000000000000ull; }

// Stable LSD radix sort of n keys (u32 or u64) carrying their positions, 8 bits per pass: one
// pass counts every digit, then each digit that is not the same in all keys scatters once (a
// narrow range of keys takes few passes). Linear in n where a comparison sort is n log n. The
// arrays are clobbered; returns the sorted positions (pos or pos2).
template <class K>
static const i32* tl_radix_sort(K* key, i32* pos, K* key2, i32* pos2, i64 n) {
  const int digits = (int)sizeof(K);
  i64 count[sizeof(K)][256];
  __builtin_memset(count, 0, sizeof(count));
  for (i64 j = 0; j < n; ++j) {
    const K k = key[j];
    for (int d = 0; d < digits; ++d) ++count[d][(k >> (8 * d)) & 255];
  }
  for (int d = 0; d < digits; ++d) {
    i64* c = count[d];
    if (n == 0 || c[(key[0] >> (8 * d)) & 255] == n) continue;
    i64 sum = 0;
    for (int v = 0; v < 256; ++v) {
      const i64 here = c[v];
      c[v] = sum;
      sum += here;
    }
    for (i64 j = 0; j < n; ++j) {
      const i64 to = c[(key[j] >> (8 * d)) & 255]++;
      key2[to] = key[j];
      pos2[to] = pos[j];
    }
    K* kt = key;
    key = key2;
    key2 = kt;
    i32* pt = pos;
    pos = pos2;
    pos2 = pt;
  }
  return pos;
}

#endif  // TILEOPS_TL_RUNTIME_H_
