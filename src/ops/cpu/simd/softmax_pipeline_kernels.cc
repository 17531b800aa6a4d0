// Highway kernels of the pipelined row softmax (float32, float16, bfloat16), compiled once per SIMD
// target and dispatched at run time. A row takes three passes: max (read the row, prefetched by the
// previous row's exp pass), exp (read it again from the cache, 2^ into float32 scratch, sum) and
// store (scale, round, write). Over a run of rows, the store of row j - 1 shares the loop of the
// exp of row j: the streaming stores then drain while the exp computes instead of stalling a short
// loop of their own (bench/results/cpu-tuning.md); float32 rows gain the most, as their exp and
// store passes move twice the bytes (bench/results/cpu-foundation-avx2.md).
#include "src/ops/cpu/simd/softmax_pipeline_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "src/ops/cpu/streaming.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/softmax_pipeline_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/ops/cpu/simd/fast_exp-inl.h"
#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
constexpr float kLog2E = 1.44269504088896341f;

// A block is 2·Lanes elements. bfloat16 pairs are split in registers into [even | odd] halves
// (BF16Elem::LoadPairs), which is how a block sits in scratch: the store undoes the order, and max
// and sum do not care about it. Elements past a row's last whole block go through ForEachVector.
template <class E>
HWY_INLINE void LoadBlock(DF d, const typename E::T* p, hn::Vec<DF>& v0, hn::Vec<DF>& v1) {
  if constexpr (E::kPairs) {
    E::LoadPairs(d, p, v0, v1);
  } else {
    v0 = E::Load(d, p);
    v1 = E::Load(d, p + hn::Lanes(d));
  }
}

// StoreF32PairsAsBF16 for probabilities (in [0, 1], never NaN: a NaN row is overwritten
// afterwards): the same round to nearest even, without the NaN select, by RoundSmallToBF16High.
template <class E>
HWY_INLINE void StoreBlock(DF d, hn::Vec<DF> v0, hn::Vec<DF> v1, typename E::T* p, bool stream) {
  if constexpr (E::kPairs) {
    const hn::Rebind<std::uint32_t, DF> du32;
    StoreMaybeStreaming(
        JoinBF16Halves(du32, RoundSmallToBF16High(d, v0), RoundSmallToBF16High(d, v1)), du32,
        reinterpret_cast<std::uint32_t*>(p), stream);
  } else {
    E::Store(d, v0, p, stream);
    E::Store(d, v1, p + hn::Lanes(d), stream);
  }
}

// The pass's exp in log2 units: float32 results take the fine fit (1e-7), float16 the coarse one
// (3e-6 against its 2.4e-4 half ulp), bfloat16 the rough one (1.1e-4 against 2e-3). Without
// kClamp, y must lie in [-126, 0] (RowNeedsNoClamp).
template <class E, bool kClamp = true>
HWY_INLINE hn::Vec<DF> Exp2Of(DF d, hn::Vec<DF> y) {
  if constexpr (std::is_same_v<E, F32Elem>) {
    return kClamp ? Exp2FineNonPositive(d, y) : Exp2Fine(d, y);
  } else if constexpr (std::is_same_v<E, BF16Elem>) {
    return kClamp ? Exp2RoughNonPositive(d, y) : Exp2Rough(d, y);
  } else {
    return kClamp ? Exp2CoarseNonPositive(d, y) : Exp2Coarse(d, y);
  }
}

// Whether rows also find their min, so that the exp pass may skip its clamp (RowNeedsNoClamp):
// on AVX2 the clamp costs more than the min (bfloat16 +4-6%), on AVX-512 not
// (bench/results/cpu-tuning.md).
constexpr bool kFindRowMin = !(HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3);

// The largest and smallest scale·x of a row (min: -inf unless kFindRowMin), and for a nonzero
// scale the row's x of the largest (`anchor`, else NaN).
struct Extremes {
  float max;
  float min;
  float anchor;
};

// How ExtremesPass reads a row: x·scale per element, or x alone (max(scale·x) is scale·max(x) for
// scale > 0, scale·min(x) for scale < 0: rounding is monotonic), which saves a multiply per vector.
enum class ExtremesOf { kScaled, kRawUp, kRawDown };

// The max and min (when wanted) of the row's x, or x·scale (kScaled).
template <class E, ExtremesOf kOf>
std::pair<float, float> RowMaxMin(const typename E::T* x, float scale, std::int64_t n,
                                  std::int64_t blocks_end) {
  constexpr bool kMax = kFindRowMin || kOf != ExtremesOf::kRawDown;
  constexpr bool kMin = kFindRowMin || kOf == ExtremesOf::kRawDown;
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  const auto lowest = hn::Set(d, -std::numeric_limits<float>::infinity());
  const auto highest = hn::Set(d, std::numeric_limits<float>::infinity());
  auto m0 = lowest;
  auto m1 = lowest;
  auto l0 = highest;
  auto l1 = highest;
  for (std::int64_t i = 0; i < blocks_end; i += 2 * lanes) {
    hn::Vec<DF> v0, v1;
    LoadBlock<E>(d, x + i, v0, v1);
    if constexpr (kOf == ExtremesOf::kScaled) {
      v0 = hn::Mul(v0, s);
      v1 = hn::Mul(v1, s);
    }
    if constexpr (kMax) {
      m0 = hn::Max(m0, v0);
      m1 = hn::Max(m1, v1);
    }
    if constexpr (kMin) {
      l0 = hn::Min(l0, v0);
      l1 = hn::Min(l1, v1);
    }
  }
  ForEachVector(d, blocks_end, n, [&](std::int64_t i, auto part) {
    auto v = Load<E>(d, x + i, part);
    if constexpr (kOf == ExtremesOf::kScaled) v = hn::Mul(v, s);
    if constexpr (kMax) m0 = hn::Max(m0, Valid(d, v, part, lowest));
    if constexpr (kMin) l0 = hn::Min(l0, Valid(d, v, part, highest));
  });
  return {kMax ? hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)))
               : -std::numeric_limits<float>::infinity(),
          kMin ? hn::GetLane(hn::MinOfLanes(d, hn::Min(l0, l1)))
               : std::numeric_limits<float>::infinity()};
}

// Extremes over the row (x86 max and min may drop a NaN: the exp pass's sum catches it).
template <class E>
Extremes ExtremesPass(const typename E::T* x, float scale, std::int64_t n,
                      std::int64_t blocks_end) {
  constexpr float kNoMin = -std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  if (scale > 0.0f) {
    const auto [hi, lo] = RowMaxMin<E, ExtremesOf::kRawUp>(x, scale, n, blocks_end);
    return {hi * scale, kFindRowMin ? lo * scale : kNoMin, hi};
  }
  if (scale < 0.0f) {
    const auto [hi, lo] = RowMaxMin<E, ExtremesOf::kRawDown>(x, scale, n, blocks_end);
    return {lo * scale, kFindRowMin ? hi * scale : kNoMin, lo};
  }
  const auto [hi, lo] = RowMaxMin<E, ExtremesOf::kScaled>(x, scale, n, blocks_end);
  return {hi, kFindRowMin ? lo : kNoMin, kNaN};
}

// Whether every y = x·scale·log2 e − max·log2 e of the row, as the exp pass computes it, is at
// least -126 (the smallest exponent whose 2^n the exp forms without its clamp): the extremes lie
// within 83 of each other (120 in log2 units) and are small enough (|max| <= 2^20) that y's
// rounding errs by under 0.5. Rows of a NaN or an infinity fail (their comparisons are false).
inline bool RowNeedsNoClamp(const Extremes& e) {
  return std::abs(e.max) <= 1048576.0f && (e.min - e.max) * kLog2E >= -120.0f;
}

// The exp pass of a row: out[i] = 2^(x[i]·scale·log2 e − shift), returning their sum.
struct ExpPass {
  const void* x;
  float scale;  // scale·log2 e
  float shift;  // max·log2 e
  float* out;
  float sum;
  // Anchored rows take y = (x − anchor)·scale instead (anchor: Extremes::anchor), which is exact
  // near the max without a fused multiply-add. Rows of a large max (|shift| >= kAnchorShift) need
  // it: shift errs by up to |shift|·2^-24, the same for every element, which the normalisation
  // cancels unless it pushes y past 2^±128 (a row of 1e10s read NaN before). So do all rows on
  // targets without FMA: x·scale, rounded before the subtraction, errs by |shift|·2^-24 per
  // element (2.3e-5 relative at a scaled max of 200).
  bool anchored;
  float anchor;
};
constexpr float kAnchorShift = 67108864.0f;  // 2^26: shift errs by at most 4

// y = x·scale − shift, or (x − anchor)·scale for anchored rows.
template <bool kAnchored>
HWY_INLINE hn::Vec<DF> ExpArgument(hn::Vec<DF> x, hn::Vec<DF> scale, hn::Vec<DF> shift,
                                   hn::Vec<DF> anchor) {
  return kAnchored ? hn::Mul(hn::Sub(x, anchor), scale) : hn::MulSub(x, scale, shift);
}

// How the exp pass forms and bounds y (Blocks).
enum class ExpArg {
  kClamped,    // y = x·scale − shift, clamped below
  kUnclamped,  // the same, y known to lie in [-126, 0] (RowNeedsNoClamp)
  kAnchored,   // ExpPass::anchored rows, clamped below
};
// The store pass of a row: y[i] = round(in[i]·factor).
struct StorePass {
  const float* in;
  float factor;
  void* y;
  bool stream;
};

// The exp pass over whole blocks [begin, end), with the store pass over the same blocks when
// kStore; meanwhile the next row (`ahead_bytes` at `ahead`) is prefetched, a line per 64 bytes
// of x.
template <class E, bool kExp, bool kStore, ExpArg kArg = ExpArg::kClamped>
HWY_INLINE void Blocks(std::int64_t begin, std::int64_t end, ExpPass& ex, const StorePass& st,
                       const char* ahead, std::int64_t ahead_bytes) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  // Locals, so that the stores cannot be taken to modify the passes' pointers.
  using T = typename E::T;
  const T* const x = static_cast<const T*>(ex.x);
  float* const out = ex.out;
  const float* const in = st.in;
  T* const y = static_cast<T*>(st.y);
  const bool stream = st.stream;
  const auto scale = hn::Set(d, ex.scale);
  const auto shift = hn::Set(d, ex.shift);
  const auto anchor = hn::Set(d, ex.anchor);
  const auto exp_of = [&](hn::Vec<DF> v) {
    return Exp2Of<E, kArg != ExpArg::kUnclamped>(
        d, ExpArgument<kArg == ExpArg::kAnchored>(v, scale, shift, anchor));
  };
  const auto factor = hn::Set(d, st.factor);
  auto a0 = hn::Zero(d);
  constexpr std::int64_t kLine = 64;
  for (std::int64_t i = begin; i < end; i += 2 * lanes) {
    if constexpr (kExp) {
      if constexpr (sizeof(T) == 2) {
        if ((i * 2) % kLine == 0 && i * 2 < ahead_bytes) {  // 2·Lanes 16-bit values <= 64 bytes
          __builtin_prefetch(ahead + i * 2, 0, 2);
        }
      } else {  // 2·Lanes float32 values: 64 bytes (AVX2) or more
        for (std::int64_t b = i * 4; b < (i + 2 * lanes) * 4 && b < ahead_bytes; b += kLine) {
          __builtin_prefetch(ahead + b, 0, 2);
        }
      }
      hn::Vec<DF> v0, v1;
      LoadBlock<E>(d, x + i, v0, v1);
      const auto e0 = exp_of(v0);
      const auto e1 = exp_of(v1);
      hn::StoreU(e0, d, out + i);
      hn::StoreU(e1, d, out + i + lanes);
      a0 = hn::Add(a0, hn::Add(e0, e1));
    }
    if constexpr (kStore) {
      const auto v0 = hn::Mul(hn::LoadU(d, in + i), factor);
      const auto v1 = hn::Mul(hn::LoadU(d, in + i + lanes), factor);
      StoreBlock<E>(d, v0, v1, y + i, stream);
    }
  }
  if constexpr (kExp) ex.sum += hn::GetLane(hn::SumOfLanes(d, a0));
}

// The exp pass over the elements [begin, n) past the last whole block.
template <class E>
void ExpTail(ExpPass& ex, std::int64_t begin, std::int64_t n) {
  const DF d;
  ForEachVector(d, begin, n, [&](std::int64_t i, auto part) {
    const auto* x = static_cast<const typename E::T*>(ex.x);
    const auto v = Load<E>(d, x + i, part);
    const auto scale = hn::Set(d, ex.scale), shift = hn::Set(d, ex.shift);
    const auto anchor = hn::Set(d, ex.anchor);
    const auto y = ex.anchored ? ExpArgument<true>(v, scale, shift, anchor)
                               : ExpArgument<false>(v, scale, shift, anchor);
    // The padding lanes must add nothing to the sum.
    const auto e = Valid(d, Exp2Of<E>(d, y), part, hn::Zero(d));
    Store<F32Elem>(d, e, ex.out + i, part);
    ex.sum += hn::GetLane(hn::SumOfLanes(d, e));
  });
}

// The store pass of row `row` (n elements, whole blocks up to blocks_end) from `begin` on; a NaN
// factor makes the row NaN throughout.
template <class E>
void StoreRest(const StorePass& st, std::int64_t begin, std::int64_t blocks_end, std::int64_t n) {
  // Its exp pass may not have run (the scratch is unwritten), so nothing is read.
  auto* y = static_cast<typename E::T*>(st.y);
  if (std::isnan(st.factor)) {
    std::fill(y, y + n, E::FromF32(std::numeric_limits<float>::quiet_NaN()));
    return;
  }
  ExpPass none{};
  Blocks<E, false, true>(begin, blocks_end, none, st, nullptr, 0);
  const DF d;
  const auto factor = hn::Set(d, st.factor);
  ForEachVector(d, blocks_end, n, [&](std::int64_t i, auto part) {
    Store<E>(d, hn::Mul(Load<F32Elem>(d, st.in + i, part), factor), y + i, part);
  });
}

template <class E>
void SoftmaxRowsPipelined(const PipelinedRow* rows, std::int64_t count, float scale, float* scratch,
                          bool stream) {
  const std::int64_t block = 2 * static_cast<std::int64_t>(hn::Lanes(DF()));
  const auto blocks_end = [&](std::int64_t j) { return rows[j].n - rows[j].n % block; };
  std::int64_t width = 0;
  for (std::int64_t j = 0; j < count; ++j) width = std::max(width, rows[j].n);
  StorePass previous{nullptr, 0.0f, nullptr, stream};  // of row j - 1
  for (std::int64_t j = 0; j < count; ++j) {
    const auto* x = static_cast<const typename E::T*>(rows[j].x);
    const std::int64_t n = rows[j].n;
    const Extremes extremes = ExtremesPass<E>(x, scale, n, blocks_end(j));
    const float m = extremes.max;
    ExpPass ex{.x = x,
               .scale = scale * kLog2E,
               .shift = m * kLog2E,
               .out = scratch + (j % 2) * width,
               .sum = 0.0f,
               .anchored = !std::isnan(extremes.anchor) &&
                           (!HWY_NATIVE_FMA || std::abs(m * kLog2E) >= kAnchorShift),
               .anchor = extremes.anchor};
    const char* ahead = j + 1 < count ? static_cast<const char*>(rows[j + 1].x) : nullptr;
    const std::int64_t ahead_bytes =
        j + 1 < count ? static_cast<std::int64_t>(sizeof(typename E::T)) * rows[j + 1].n : 0;
    // The blocks where row j's exp and row j - 1's store run together (a NaN row j - 1 is
    // filled by StoreRest alone).
    const std::int64_t shared = j > 0 && std::isfinite(m) && !std::isnan(previous.factor)
                                    ? std::min(blocks_end(j), blocks_end(j - 1))
                                    : 0;
    if (std::isfinite(m)) {
      // The exp's clamp is an operation in ~20 per vector, skipped where no y can need it.
      const auto exp_blocks = [&](auto arg) {
        Blocks<E, true, true, arg()>(0, shared, ex, previous, ahead, ahead_bytes);
        Blocks<E, true, false, arg()>(shared, blocks_end(j), ex, previous, ahead, ahead_bytes);
      };
      if (ex.anchored) {
        exp_blocks(std::integral_constant<ExpArg, ExpArg::kAnchored>{});
      } else if (kFindRowMin && RowNeedsNoClamp(extremes)) {
        exp_blocks(std::integral_constant<ExpArg, ExpArg::kUnclamped>{});
      } else {
        exp_blocks(std::integral_constant<ExpArg, ExpArg::kClamped>{});
      }
      ExpTail<E>(ex, blocks_end(j), n);
    }
    if (j > 0) StoreRest<E>(previous, shared, blocks_end(j - 1), rows[j - 1].n);
    // The max entry contributes 2^0 = 1, so sum >= 1 unless a NaN made it NaN. A row whose
    // scaled values hold a NaN or +inf, or are all -inf, is NaN throughout.
    const float factor = std::isfinite(m) && !std::isnan(ex.sum)
                             ? 1.0f / ex.sum
                             : std::numeric_limits<float>::quiet_NaN();
    previous = {ex.out, factor, rows[j].y, stream};
  }
  if (count > 0) StoreRest<E>(previous, 0, blocks_end(count - 1), rows[count - 1].n);
  if (stream) end_streaming_stores();
}

void SoftmaxRows(DataType dtype, const PipelinedRow* rows, std::int64_t count, float scale,
                 float* scratch, bool stream) {
  VisitFloat(dtype, "softmax_rows_pipelined", [&](auto elem) {
    SoftmaxRowsPipelined<decltype(elem)>(rows, count, scale, scratch, stream);
  });
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(SoftmaxRows);

void softmax_rows_pipelined(DataType dtype, const PipelinedRow* rows, std::int64_t count,
                            float scale, float* scratch, bool stream) {
  TILEOPS_DYNAMIC_DISPATCH(SoftmaxRows)(dtype, rows, count, scale, scratch, stream);
}

void softmax_row_pipelined(DataType dtype, const void* x, float scale, std::int64_t n,
                           float* scratch, void* out, bool stream) {
  const PipelinedRow row{x, out, n};
  softmax_rows_pipelined(dtype, &row, 1, scale, scratch, stream);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
