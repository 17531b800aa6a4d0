#include "src/ops/cpu/simd/gemm_kernels.h"

#include <algorithm>
#include <cstddef>

#include "tileops/core/error.h"
#include "tileops/core/float8.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/gemm_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/fp8-inl.h"
#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

std::int64_t GemmNr() { return 3 * static_cast<std::int64_t>(hn::Lanes(DF())); }

// Lines of the next B strip that a micro-kernel requests while it runs: `lines` cache lines
// from `next`, one every kc / lines steps (at most one a step), into L2.
struct BFetch {
  const float* next;
  std::int64_t lines;
};

// A register tile of kRows rows × 3 vectors, rows [kRow0, kRow0 + kRows) of an A strip. Per k:
// 3·kRows FMAs against 3 B loads and kRows broadcasts. AVX2's 16 registers hold a 4-row tile
// (12 accumulators, three B vectors, one broadcast); AVX-512's 32 hold 8 rows, which halves the
// B loads per FMA (bench/results/cpu-tuning.md). The tile is stored to `out` (row stride
// ld_out), plus the tile at `in` (ld_in) when kAdd and plus the vectors at `bias` when kBias.
template <int kRows, int kRow0, bool kAdd, bool kBias>
HWY_NOINLINE void MicroKernel(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b,
                              std::int64_t kc, const float* in, std::int64_t ld_in, float* out,
                              std::int64_t ld_out, const float* HWY_RESTRICT bias, BFetch fetch) {
  const DF d;
  const std::size_t n = hn::Lanes(d);
  in += kRow0 * ld_in;
  out += kRow0 * ld_out;
  // The tiles read and written were last touched a K block ago (or never: C) and have left L1:
  // request them now, into L2 only (L1 would evict them again while the strips stream through),
  // so that the loads and stores at the end do not stall.
  for (int r = 0; r < kRows; ++r) {
    for (std::size_t j = 0; j < 3 * n; j += 16) __builtin_prefetch(out + r * ld_out + j, 1, 2);
    __builtin_prefetch(out + r * ld_out + 3 * n - 1, 1, 2);
    if (kAdd && in != out) {
      for (std::size_t j = 0; j < 3 * n; j += 16) __builtin_prefetch(in + r * ld_in + j, 0, 2);
      __builtin_prefetch(in + r * ld_in + 3 * n - 1, 0, 2);
    }
  }
  // Runs of `every` steps, each after one line's request (the rest of K in one run once the lines
  // are out): no test inside the run.
  const std::int64_t every = fetch.lines > 0 ? std::max<std::int64_t>(1, kc / fetch.lines) : kc;
  hn::Vec<DF> acc[kRows][3];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = acc[r][2] = hn::Zero(d);
  a += kRow0;
  for (std::int64_t p = 0; p < kc;) {
    std::int64_t stop = kc;
    if (fetch.lines > 0) {
      __builtin_prefetch(fetch.next, 0, 2);
      fetch.next += 16;
      if (--fetch.lines > 0) stop = std::min(kc, p + every);
    }
#pragma GCC unroll 4
    for (; p < stop; ++p) {
      const auto b0 = hn::Load(d, b);
      const auto b1 = hn::Load(d, b + n);
      const auto b2 = hn::Load(d, b + 2 * n);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const auto av = hn::Set(d, a[r]);
        acc[r][0] = hn::MulAdd(av, b0, acc[r][0]);
        acc[r][1] = hn::MulAdd(av, b1, acc[r][1]);
        acc[r][2] = hn::MulAdd(av, b2, acc[r][2]);
      }
      a += kGemmMr;
      b += 3 * n;
    }
  }
  // The store's variants are template constants: with a run-time select GCC spilled the tile.
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < 3; ++v) {
      auto x = acc[r][v];
      if constexpr (kAdd) x = hn::Add(x, hn::LoadU(d, in + r * ld_in + v * n));
      if constexpr (kBias) x = hn::Add(x, hn::LoadU(d, bias + v * n));
      hn::StoreU(x, d, out + r * ld_out + v * n);
    }
  }
}

// One kGemmMr-row strip against one B strip: out = A·B (+ in) (+ bias) as in MicroKernel.
template <bool kAdd, bool kBias>
HWY_INLINE void StripKernel(const float* a, const float* b, std::int64_t kc, const float* in,
                            std::int64_t ld_in, float* out, std::int64_t ld_out, const float* bias,
                            BFetch fetch) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  MicroKernel<8, 0, kAdd, kBias>(a, b, kc, in, ld_in, out, ld_out, bias, fetch);
#else
  const BFetch first{fetch.next, fetch.lines / 2};
  const BFetch second{fetch.next + 16 * first.lines, fetch.lines - first.lines};
  MicroKernel<4, 0, kAdd, kBias>(a, b, kc, in, ld_in, out, ld_out, bias, first);
  MicroKernel<4, 4, kAdd, kBias>(a, b, kc, in, ld_in, out, ld_out, bias, second);
#endif
}

// Tile (s, t) of the macro kernel: to `direct` (the caller's C, with its bias) when that covers
// the tile, else to the accumulator.
HWY_INLINE void TileKernel(const float* a, const float* b, std::int64_t kc, float* acc,
                           std::int64_t ld_acc, bool accumulate, const GemmDirectOut* direct,
                           std::int64_t s, std::int64_t t, BFetch fetch) {
  const std::int64_t nr = GemmNr();
  float* tile = acc + s * kGemmMr * ld_acc + t * nr;
  const float* in = tile;  // read only when accumulating
  if (direct == nullptr || s >= direct->full_m_strips || t >= direct->full_n_strips) {
    if (accumulate)
      return StripKernel<true, false>(a, b, kc, in, ld_acc, tile, ld_acc, nullptr, fetch);
    return StripKernel<false, false>(a, b, kc, in, ld_acc, tile, ld_acc, nullptr, fetch);
  }
  float* c = direct->c + s * kGemmMr * direct->ldc + t * nr;
  const float* bias = direct->bias == nullptr ? nullptr : direct->bias + t * nr;
  if (accumulate) {
    if (bias != nullptr) {
      return StripKernel<true, true>(a, b, kc, in, ld_acc, c, direct->ldc, bias, fetch);
    }
    return StripKernel<true, false>(a, b, kc, in, ld_acc, c, direct->ldc, nullptr, fetch);
  }
  if (bias != nullptr) {
    return StripKernel<false, true>(a, b, kc, in, ld_acc, c, direct->ldc, bias, fetch);
  }
  StripKernel<false, false>(a, b, kc, in, ld_acc, c, direct->ldc, nullptr, fetch);
}

// B strips outside, A strips inside: one B strip (kc × nr floats, 48 KiB on AVX2 and 96 KiB on
// AVX-512 at kc = 512) stays in L2 while the A block streams from L2. The packed B panel is
// larger than L2 and comes from L3: the A strips of one B strip share out the fetch of the next
// one, which otherwise stalled the first A strip on it at half speed
// (bench/results/cpu-tuning.md).
void MacroKernel(const float* a, std::int64_t m_strips, const float* b, std::int64_t n_strips,
                 std::int64_t kc, float* acc, std::int64_t ld_acc, bool accumulate,
                 const GemmDirectOut* direct) {
  const std::int64_t nr = GemmNr();
  const std::int64_t strip_lines = kc * nr / 16;  // 16 floats a line
  const std::int64_t share = (strip_lines + m_strips - 1) / std::max<std::int64_t>(1, m_strips);
  for (std::int64_t t = 0; t < n_strips; ++t) {
    const float* bt = b + t * kc * nr;
    for (std::int64_t s = 0; s < m_strips; ++s) {
      const std::int64_t first = s * share;
      const BFetch fetch{
          bt + kc * nr + first * 16,
          t + 1 < n_strips ? std::clamp<std::int64_t>(strip_lines - first, 0, share) : 0};
      TileKernel(a + s * kc * kGemmMr, bt, kc, acc, ld_acc, accumulate, direct, s, t, fetch);
    }
  }
}

void EpilogueRow(const float* acc, float alpha, const float* c, float beta, const float* bias,
                 std::int64_t n, float* out) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, alpha);
  const auto vb = hn::Set(d, beta);
  std::int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    auto v = hn::Mul(va, hn::LoadU(d, acc + j));
    if (c != nullptr) v = hn::MulAdd(vb, hn::LoadU(d, c + j), v);
    if (bias != nullptr) v = hn::Add(v, hn::LoadU(d, bias + j));
    hn::StoreU(v, d, out + j);
  }
  for (; j < n; ++j) {
    float v = alpha * acc[j];
    if (c != nullptr) v += beta * c[j];
    if (bias != nullptr) v += bias[j];
    out[j] = v;
  }
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// TransposeRows over groups of 8 rows in 8 × 8 blocks of 256-bit registers: half the loads and
// stores of 4 × 4 blocks and three quarters of the shuffles. Returns the rows done.
std::int64_t Transpose8Rows(const float* const* rows, std::int64_t n_rows, std::int64_t count,
                            float* out, std::int64_t ld) {
  const hn::FixedTag<float, 8> d;
  const hn::Repartition<std::uint64_t, decltype(d)> du;
  using V = hn::Vec<decltype(d)>;
  std::int64_t r = 0;
  for (; r + 8 <= n_rows; r += 8) {
    std::int64_t p = 0;
    for (; p + 8 <= count; p += 8) {
      V v[8];
      for (int i = 0; i < 8; ++i) v[i] = hn::LoadU(d, rows[r + i] + p);
      // Per 128-bit half, rows 2i and 2i + 1 paired: t[2i] holds elements 0, 1 (| 4, 5),
      // t[2i + 1] elements 2, 3 (| 6, 7).
      hn::Vec<decltype(du)> t[8];
      for (int i = 0; i < 4; ++i) {
        t[2 * i] = hn::BitCast(du, hn::InterleaveLower(d, v[2 * i], v[2 * i + 1]));
        t[2 * i + 1] = hn::BitCast(du, hn::InterleaveUpper(d, v[2 * i], v[2 * i + 1]));
      }
      // u[q][c]: column c (| c + 4) of rows 4q .. 4q + 3.
      V u[2][4];
      for (int q = 0; q < 2; ++q) {
        u[q][0] = hn::BitCast(d, hn::InterleaveLower(du, t[4 * q], t[4 * q + 2]));
        u[q][1] = hn::BitCast(d, hn::InterleaveUpper(du, t[4 * q], t[4 * q + 2]));
        u[q][2] = hn::BitCast(d, hn::InterleaveLower(du, t[4 * q + 1], t[4 * q + 3]));
        u[q][3] = hn::BitCast(d, hn::InterleaveUpper(du, t[4 * q + 1], t[4 * q + 3]));
      }
      float* o = out + p * ld + r;
      for (int c = 0; c < 4; ++c) {
        hn::StoreU(hn::ConcatLowerLower(d, u[1][c], u[0][c]), d, o + c * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, u[1][c], u[0][c]), d, o + (c + 4) * ld);
      }
    }
    for (; p < count; ++p) {
      for (int i = 0; i < 8; ++i) out[p * ld + r + i] = rows[r + i][p];
    }
  }
  return r;
}
#endif

// out[p·ld + r] = rows[r][p], r < n_rows, p < count: 4 × 4 blocks transposed in 128-bit
// registers (every target has them), the edges element by element. The packs of a row-major A
// and of a linear's weight ([N, K]) are such transposes: element by element, in the portable
// code, they took 8% of a float32 2048³ GEMM's time on one thread; 5% this way, most of it
// waiting on memory.
void TransposeRows(const float* const* rows, std::int64_t n_rows, std::int64_t count, float* out,
                   std::int64_t ld) {
  std::int64_t r = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  r = Transpose8Rows(rows, n_rows, count, out, ld);
#endif
#if !(HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE)
  const hn::FixedTag<float, 4> d;
  const hn::Repartition<std::uint64_t, decltype(d)> du;
  for (; r + 4 <= n_rows; r += 4) {
    const float *r0 = rows[r], *r1 = rows[r + 1], *r2 = rows[r + 2], *r3 = rows[r + 3];
    std::int64_t p = 0;
    for (; p + 4 <= count; p += 4) {
      const auto a = hn::LoadU(d, r0 + p), b = hn::LoadU(d, r1 + p);
      const auto c = hn::LoadU(d, r2 + p), e = hn::LoadU(d, r3 + p);
      // ab_lo = a0 b0 a1 b1, ce_lo = c0 e0 c1 e1: column 0 is the low halves, column 1 the high.
      const auto ab_lo = hn::BitCast(du, hn::InterleaveLower(d, a, b));
      const auto ce_lo = hn::BitCast(du, hn::InterleaveLower(d, c, e));
      const auto ab_hi = hn::BitCast(du, hn::InterleaveUpper(d, a, b));
      const auto ce_hi = hn::BitCast(du, hn::InterleaveUpper(d, c, e));
      float* o = out + p * ld + r;
      hn::StoreU(hn::BitCast(d, hn::InterleaveLower(du, ab_lo, ce_lo)), d, o);
      hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(du, ab_lo, ce_lo)), d, o + ld);
      hn::StoreU(hn::BitCast(d, hn::InterleaveLower(du, ab_hi, ce_hi)), d, o + 2 * ld);
      hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(du, ab_hi, ce_hi)), d, o + 3 * ld);
    }
    for (; p < count; ++p) {
      for (int i = 0; i < 4; ++i) out[p * ld + r + i] = rows[r + i][p];
    }
  }
#endif
  for (; r < n_rows; ++r) {
    for (std::int64_t p = 0; p < count; ++p) out[p * ld + r] = rows[r][p];
  }
}

// float8 weights (scaled_mm's decode path): Lanes(d) codes decoded in registers per load.
template <bool kE4M3>
struct Fp8Elem {
  using T = std::uint8_t;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* p) {
    return LoadFp8AsF32<kE4M3>(d, p);
  }
  static float ToF32(T x) { return kE4M3 ? float8_e4m3fn_to_float(x) : float8_e5m2_to_float(x); }
};

// K is walked in blocks whose kRows weight rows stay in L1 while every group of x rows visits
// them: the weights come from memory once, x from L1 or L2. Partial sums are vectors kept in
// `part`. 1024 is the fastest block measured (bench/results/cpu-tuning.md).
constexpr std::int64_t kDotBlock = 1024;
// Weight rows per group: kDotRows<W> rows × 4 x rows of accumulators plus kDotRows<W> + 1
// registers. 3 rows fill AVX2's 16 registers. AVX-512's 32 hold 6 float32 rows, which halves
// the x loads per FMA, or 4 16-bit rows, whose widening needs registers too
// (bench/results/cpu-tuning.md).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
template <class W>
constexpr int kDotRows = sizeof(typename W::T) == 4 ? 6 : 4;
#else
template <class W>
constexpr int kDotRows = 3;
#endif

// The next K block of a group's weight rows (`next`, nullptr for none), fetched while the passes
// of x rows (`pass` of `passes`) run over the current one: one line of each row every `passes`
// lines' steps, so that the weights stream at an even rate instead of all during pass 0
// (bench/results/cpu-tuning.md).
template <class T>
struct NextBlock {
  const T* next;
  std::int64_t pass, passes;
};

template <class W, int kRows, int kCols>
HWY_INLINE void DotBlock(const float* x, std::int64_t ld_x, const typename W::T* w,
                         std::int64_t ld_w, std::int64_t k0, std::int64_t k1, float* part,
                         bool first, const NextBlock<typename W::T>& pf) {
  const DF d;
  const std::size_t lanes = hn::Lanes(d);
  hn::Vec<DF> acc[kCols][kRows];
  for (int i = 0; i < kCols; ++i) {
    for (int r = 0; r < kRows; ++r) {
      acc[i][r] = first ? hn::Zero(d) : hn::Load(d, part + (i * kRows + r) * lanes);
    }
  }
  constexpr auto kLine = static_cast<std::int64_t>(64 / sizeof(typename W::T));
  const std::int64_t every = pf.passes * (kLine / static_cast<std::int64_t>(lanes));  // steps
  const typename W::T* fetch =
      pf.next == nullptr ? nullptr : pf.next + pf.pass * ((k1 - k0) / kLine / pf.passes) * kLine;
  std::int64_t tick = 0;
  for (std::int64_t p = k0; p < k1; p += static_cast<std::int64_t>(lanes)) {
    if (fetch != nullptr && ++tick == every) {
      tick = 0;
      for (int r = 0; r < kRows; ++r) __builtin_prefetch(fetch + r * ld_w, 0, 2);
      fetch += kLine;
    }
    hn::Vec<DF> wv[kRows];
    for (int r = 0; r < kRows; ++r) wv[r] = W::Load(d, w + r * ld_w + p);
    for (int i = 0; i < kCols; ++i) {
      const auto xv = hn::LoadU(d, x + i * ld_x + p);
      for (int r = 0; r < kRows; ++r) acc[i][r] = hn::MulAdd(xv, wv[r], acc[i][r]);
    }
  }
  for (int i = 0; i < kCols; ++i) {
    for (int r = 0; r < kRows; ++r) hn::Store(acc[i][r], d, part + (i * kRows + r) * lanes);
  }
}

// out[i][r] for kRows weight rows and all m (<= 16) x rows.
template <class W, int kRows>
void DotRowGroup(const float* x, std::int64_t ld_x, std::int64_t m, const typename W::T* w,
                 std::int64_t ld_w, std::int64_t k, float* out, std::int64_t ld_out) {
  const DF d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const std::int64_t kv = k / lanes * lanes;
  HWY_ALIGN float part[16 * kRows * hn::MaxLanes(DF())];
  std::fill(part, part + m * kRows * lanes, 0.0f);  // also keeps GCC's uninitialised check quiet
  const std::int64_t passes = (m + 3) / 4;
  for (std::int64_t k0 = 0; k0 < kv; k0 += kDotBlock) {
    const std::int64_t k1 = std::min(kv, k0 + kDotBlock);
    // One pass reads the weights once, as the hardware prefetcher expects; after the last
    // block, the next group's rows come next.
    const typename W::T* next = passes == 1 ? nullptr : k1 < kv ? w + k1 : w + kRows * ld_w;
    for (std::int64_t i = 0; i < m; i += 4) {
      const float* xi = x + i * ld_x;
      float* pi = part + i * kRows * lanes;
      const NextBlock<typename W::T> pf{next, i / 4, passes};
      switch (std::min<std::int64_t>(4, m - i)) {
        case 4:
          DotBlock<W, kRows, 4>(xi, ld_x, w, ld_w, k0, k1, pi, k0 == 0, pf);
          break;
        case 3:
          DotBlock<W, kRows, 3>(xi, ld_x, w, ld_w, k0, k1, pi, k0 == 0, pf);
          break;
        case 2:
          DotBlock<W, kRows, 2>(xi, ld_x, w, ld_w, k0, k1, pi, k0 == 0, pf);
          break;
        default:
          DotBlock<W, kRows, 1>(xi, ld_x, w, ld_w, k0, k1, pi, k0 == 0, pf);
      }
    }
  }
  for (std::int64_t i = 0; i < m; ++i) {
    for (int r = 0; r < kRows; ++r) {
      float s = kv == 0
                    ? 0.0f
                    : hn::GetLane(hn::SumOfLanes(d, hn::Load(d, part + (i * kRows + r) * lanes)));
      for (std::int64_t q = kv; q < k; ++q) s += x[i * ld_x + q] * W::ToF32(w[r * ld_w + q]);
      out[i * ld_out + r] = s;
    }
  }
}

template <class W>
void DotRows(const float* x, std::int64_t ld_x, std::int64_t m, const void* w_bytes,
             std::int64_t ld_w, std::int64_t n, std::int64_t k, float* out, std::int64_t ld_out) {
  const auto* w = static_cast<const typename W::T*>(w_bytes);
  std::int64_t j = 0;
  if (m == 1) {  // one x row: twice the weight rows give twice the independent FMA chains
    for (; j + 2 * kDotRows<W> <= n; j += 2 * kDotRows<W>) {
      DotRowGroup<W, 2 * kDotRows<W>>(x, ld_x, m, w + j * ld_w, ld_w, k, out + j, ld_out);
    }
  }
  for (; j + kDotRows<W> <= n; j += kDotRows<W>) {
    DotRowGroup<W, kDotRows<W>>(x, ld_x, m, w + j * ld_w, ld_w, k, out + j, ld_out);
  }
  for (; j < n; ++j) DotRowGroup<W, 1>(x, ld_x, m, w + j * ld_w, ld_w, k, out + j, ld_out);
}

void DotRowsF32(const float* x, std::int64_t ld_x, std::int64_t m, const void* w, std::int64_t ld_w,
                std::int64_t n, std::int64_t k, float* out, std::int64_t ld_out) {
  DotRows<F32Elem>(x, ld_x, m, w, ld_w, n, k, out, ld_out);
}
void DotRowsBF16(const float* x, std::int64_t ld_x, std::int64_t m, const void* w,
                 std::int64_t ld_w, std::int64_t n, std::int64_t k, float* out,
                 std::int64_t ld_out) {
  DotRows<BF16Elem>(x, ld_x, m, w, ld_w, n, k, out, ld_out);
}
void DotRowsE4M3(const float* x, std::int64_t ld_x, std::int64_t m, const void* w,
                 std::int64_t ld_w, std::int64_t n, std::int64_t k, float* out,
                 std::int64_t ld_out) {
  DotRows<Fp8Elem<true>>(x, ld_x, m, w, ld_w, n, k, out, ld_out);
}
void DotRowsE5M2(const float* x, std::int64_t ld_x, std::int64_t m, const void* w,
                 std::int64_t ld_w, std::int64_t n, std::int64_t k, float* out,
                 std::int64_t ld_out) {
  DotRows<Fp8Elem<false>>(x, ld_x, m, w, ld_w, n, k, out, ld_out);
}
void DotRowsF16(const float* x, std::int64_t ld_x, std::int64_t m, const void* w, std::int64_t ld_w,
                std::int64_t n, std::int64_t k, float* out, std::int64_t ld_out) {
  DotRows<F16Elem>(x, ld_x, m, w, ld_w, n, k, out, ld_out);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(GemmNr);
HWY_EXPORT(MacroKernel);
HWY_EXPORT(EpilogueRow);
HWY_EXPORT(TransposeRows);
HWY_EXPORT(DotRowsF32);
HWY_EXPORT(DotRowsBF16);
HWY_EXPORT(DotRowsF16);
HWY_EXPORT(DotRowsE4M3);
HWY_EXPORT(DotRowsE5M2);

// Not cached: tests switch the dispatch target between calls.
std::int64_t gemm_nr() { return TILEOPS_DYNAMIC_DISPATCH(GemmNr)(); }

void gemm_macro_kernel(const float* a, std::int64_t m_strips, const float* b, std::int64_t n_strips,
                       std::int64_t kc, float* acc, std::int64_t ld_acc, bool accumulate,
                       const GemmDirectOut* direct) {
  TILEOPS_DYNAMIC_DISPATCH(MacroKernel)
  (a, m_strips, b, n_strips, kc, acc, ld_acc, accumulate, direct);
}

void gemm_epilogue_row(const float* acc, float alpha, const float* c, float beta, const float* bias,
                       std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(EpilogueRow)(acc, alpha, c, beta, bias, n, out);
}

void gemm_transpose_rows(const float* const* rows, std::int64_t n_rows, std::int64_t count,
                         float* out, std::int64_t ld) {
  TILEOPS_DYNAMIC_DISPATCH(TransposeRows)(rows, n_rows, count, out, ld);
}

void gemm_dot_rows(const float* x, std::int64_t ld_x, std::int64_t m, const void* w,
                   DataType w_dtype, std::int64_t ld_w, std::int64_t n, std::int64_t k, float* out,
                   std::int64_t ld_out) {
  if (m > 16) throw_internal_error("gemm_dot_rows", "at most 16 rows of x");  // partial sums
  switch (w_dtype) {
    case DataType::kFloat32:
      return TILEOPS_DYNAMIC_DISPATCH(DotRowsF32)(x, ld_x, m, w, ld_w, n, k, out, ld_out);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(DotRowsBF16)(x, ld_x, m, w, ld_w, n, k, out, ld_out);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(DotRowsF16)(x, ld_x, m, w, ld_w, n, k, out, ld_out);
    case DataType::kFloat8E4M3FN:
      return TILEOPS_DYNAMIC_DISPATCH(DotRowsE4M3)(x, ld_x, m, w, ld_w, n, k, out, ld_out);
    case DataType::kFloat8E5M2:
      return TILEOPS_DYNAMIC_DISPATCH(DotRowsE5M2)(x, ld_x, m, w, ld_w, n, k, out, ld_out);
    default:
      throw_internal_error("gemm_dot_rows",
                           "weights must be float32, float16, bfloat16 or float8 (e4m3fn, e5m2)");
  }
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
