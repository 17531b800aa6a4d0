// Highway kernels of the float16/bfloat16 row softmax, compiled once per SIMD target and
// dispatched at run time. A row takes three passes: max (read the row, prefetched by the previous
// row's exp pass), exp (read it again from the cache, 2^ into float32 scratch, sum) and store
// (scale, round, write). Over a run of rows, the store of row j - 1 shares the loop of the exp of
// row j: the streaming stores then drain while the exp computes instead of stalling a short loop
// of their own (measured 1.2x the throughput of three separate passes on [4096, 4096] bfloat16).
#include "src/ops/cpu/simd/softmax16_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/ops/cpu/streaming.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/softmax16_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/ops/cpu/simd/convert-inl.h"
#include "src/ops/cpu/simd/fast_exp-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
constexpr float kLog2E = 1.44269504088896341f;

// A block is 2·Lanes elements. bfloat16 pairs are split in registers into [even | odd] halves
// (convert-inl.h), which is how a block sits in scratch: the store undoes the order, and max and
// sum do not care about it. Elements past a row's last whole block are handled one by one.
template <bool kBF16>
HWY_INLINE void LoadBlock(DF d, const std::uint16_t* p, hn::Vec<DF>& v0, hn::Vec<DF>& v1) {
  if constexpr (kBF16) {
    LoadBF16PairsAsF32(d, p, v0, v1);
  } else {
    v0 = LoadF16AsF32(d, p);
    v1 = LoadF16AsF32(d, p + hn::Lanes(d));
  }
}

// StoreF32PairsAsBF16 for values known not to be NaN (probabilities in [0, 1]; a NaN row is
// overwritten afterwards): the same round to nearest even, without the NaN select.
template <bool kBF16>
HWY_INLINE void StoreBlock(DF d, hn::Vec<DF> v0, hn::Vec<DF> v1, std::uint16_t* p, bool stream) {
  if constexpr (kBF16) {
    const hn::Rebind<std::uint32_t, DF> du32;
    const auto round = [&](hn::Vec<DF> v) {
      const auto u = hn::BitCast(du32, v);
      const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
      return hn::Add(u, hn::Add(hn::Set(du32, 0x7fffu), lsb));
    };
    StoreMaybeStreaming(JoinBF16Halves(du32, round(v0), round(v1)), du32,
                        reinterpret_cast<std::uint32_t*>(p), stream);
  } else {
    StoreF32AsF16(d, v0, p, stream);
    StoreF32AsF16(d, v1, p + hn::Lanes(d), stream);
  }
}

template <bool kBF16>
float ToF32(std::uint16_t v) {
  return kBF16 ? bfloat16_to_float(v) : float16_to_float(v);
}
template <bool kBF16>
std::uint16_t FromF32(float v) {
  return kBF16 ? float_to_bfloat16(v) : float_to_float16(v);
}

// max scale·x over the row (x86 max may drop a NaN: the exp pass's sum catches it).
template <bool kBF16>
float MaxPass(const std::uint16_t* x, float scale, std::int64_t n, std::int64_t blocks_end) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  // max(scale·x) is scale·max(x) for scale > 0, which saves a multiply per vector.
  const bool scale_after = scale > 0.0f;
  const auto s = hn::Set(d, scale);
  auto m0 = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m1 = m0;
  for (std::int64_t i = 0; i < blocks_end; i += 2 * lanes) {
    hn::Vec<DF> v0, v1;
    LoadBlock<kBF16>(d, x + i, v0, v1);
    if (scale_after) {
      m0 = hn::Max(m0, v0);
      m1 = hn::Max(m1, v1);
    } else {
      m0 = hn::Max(m0, hn::Mul(v0, s));
      m1 = hn::Max(m1, hn::Mul(v1, s));
    }
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  for (std::int64_t i = blocks_end; i < n; ++i) {
    m = std::max(m, scale_after ? ToF32<kBF16>(x[i]) : ToF32<kBF16>(x[i]) * scale);
  }
  return scale_after ? m * scale : m;
}

// The exp pass of a row: out[i] = 2^(x[i]·scale·log2 e − shift), returning their sum.
struct ExpPass {
  const std::uint16_t* x;
  float scale;  // scale·log2 e
  float shift;  // max·log2 e
  float* out;
  float sum;
};
// The store pass of a row: y[i] = round(in[i]·factor).
struct StorePass {
  const float* in;
  float factor;
  std::uint16_t* y;
  bool stream;
};

// The exp pass over whole blocks [begin, end), with the store pass over the same blocks when
// kStore; meanwhile the next row (`ahead_bytes` at `ahead`) is prefetched, a line per 64 bytes
// of x.
template <bool kBF16, bool kExp, bool kStore>
HWY_INLINE void Blocks(std::int64_t begin, std::int64_t end, ExpPass& ex, const StorePass& st,
                       const char* ahead, std::int64_t ahead_bytes) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  // Locals, so that the stores cannot be taken to modify the passes' pointers.
  const std::uint16_t* const x = ex.x;
  float* const out = ex.out;
  const float* const in = st.in;
  std::uint16_t* const y = st.y;
  const bool stream = st.stream;
  const auto scale = hn::Set(d, ex.scale);
  const auto shift = hn::Set(d, ex.shift);
  const auto factor = hn::Set(d, st.factor);
  auto a0 = hn::Zero(d);
  constexpr std::int64_t kLine = 64;
  for (std::int64_t i = begin; i < end; i += 2 * lanes) {
    if constexpr (kExp) {
      if ((i * 2) % kLine == 0 && i * 2 < ahead_bytes) {  // 2·Lanes 16-bit values <= 64 bytes
        __builtin_prefetch(ahead + i * 2, 0, 2);
      }
      hn::Vec<DF> v0, v1;
      LoadBlock<kBF16>(d, x + i, v0, v1);
      const auto e0 = Exp2CoarseNonPositive(d, hn::MulSub(v0, scale, shift));
      const auto e1 = Exp2CoarseNonPositive(d, hn::MulSub(v1, scale, shift));
      hn::StoreU(e0, d, out + i);
      hn::StoreU(e1, d, out + i + lanes);
      a0 = hn::Add(a0, hn::Add(e0, e1));
    }
    if constexpr (kStore) {
      const auto v0 = hn::Mul(hn::LoadU(d, in + i), factor);
      const auto v1 = hn::Mul(hn::LoadU(d, in + i + lanes), factor);
      StoreBlock<kBF16>(d, v0, v1, y + i, stream);
    }
  }
  if constexpr (kExp) ex.sum += hn::GetLane(hn::SumOfLanes(d, a0));
}

// The exp pass over the elements [begin, n) past the last whole block.
template <bool kBF16>
void ExpTail(ExpPass& ex, std::int64_t begin, std::int64_t n) {
  const DF d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  for (std::int64_t i = begin; i < n; i += lanes) {
    const std::int64_t count = std::min(lanes, n - i);
    HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
    for (std::int64_t k = 0; k < count; ++k) buf[k] = ToF32<kBF16>(ex.x[i + k]);
    const auto y = hn::MulSub(hn::Load(d, buf), hn::Set(d, ex.scale), hn::Set(d, ex.shift));
    // The padding lanes must add nothing to the sum.
    const auto e = hn::IfThenElseZero(hn::FirstN(d, static_cast<std::size_t>(count)),
                                      Exp2CoarseNonPositive(d, y));
    hn::Store(e, d, buf);
    std::copy(buf, buf + count, ex.out + i);
    ex.sum += hn::GetLane(hn::SumOfLanes(d, e));
  }
}

// The store pass of row `row` (n elements, whole blocks up to blocks_end) from `begin` on; a NaN
// factor makes the row NaN throughout.
template <bool kBF16>
void StoreRest(const StorePass& st, std::int64_t begin, std::int64_t blocks_end, std::int64_t n) {
  // Its exp pass may not have run (the scratch is unwritten), so nothing is read.
  if (std::isnan(st.factor)) {
    std::fill(st.y, st.y + n, FromF32<kBF16>(std::numeric_limits<float>::quiet_NaN()));
    return;
  }
  ExpPass none{};
  Blocks<kBF16, false, true>(begin, blocks_end, none, st, nullptr, 0);
  for (std::int64_t i = blocks_end; i < n; ++i) st.y[i] = FromF32<kBF16>(st.in[i] * st.factor);
}

template <bool kBF16>
void SoftmaxRows16(const Row16* rows, std::int64_t count, float scale, float* scratch,
                   bool stream) {
  const std::int64_t block = 2 * static_cast<std::int64_t>(hn::Lanes(DF()));
  const auto blocks_end = [&](std::int64_t j) { return rows[j].n - rows[j].n % block; };
  std::int64_t width = 0;
  for (std::int64_t j = 0; j < count; ++j) width = std::max(width, rows[j].n);
  StorePass previous{nullptr, 0.0f, nullptr, stream};  // of row j - 1
  for (std::int64_t j = 0; j < count; ++j) {
    const auto* x = static_cast<const std::uint16_t*>(rows[j].x);
    const std::int64_t n = rows[j].n;
    const float m = MaxPass<kBF16>(x, scale, n, blocks_end(j));
    ExpPass ex{x, scale * kLog2E, m * kLog2E, scratch + (j % 2) * width, 0.0f};
    const char* ahead = j + 1 < count ? static_cast<const char*>(rows[j + 1].x) : nullptr;
    const std::int64_t ahead_bytes = j + 1 < count ? 2 * rows[j + 1].n : 0;
    // The blocks where row j's exp and row j - 1's store run together (a NaN row j - 1 is
    // filled by StoreRest alone).
    const std::int64_t shared = j > 0 && std::isfinite(m) && !std::isnan(previous.factor)
                                    ? std::min(blocks_end(j), blocks_end(j - 1))
                                    : 0;
    if (std::isfinite(m)) {
      Blocks<kBF16, true, true>(0, shared, ex, previous, ahead, ahead_bytes);
      Blocks<kBF16, true, false>(shared, blocks_end(j), ex, previous, ahead, ahead_bytes);
      ExpTail<kBF16>(ex, blocks_end(j), n);
    }
    if (j > 0) StoreRest<kBF16>(previous, shared, blocks_end(j - 1), rows[j - 1].n);
    // The max entry contributes 2^0 = 1, so sum >= 1 unless a NaN made it NaN. A row whose
    // scaled values hold a NaN or +inf, or are all -inf, is NaN throughout.
    const float factor = std::isfinite(m) && !std::isnan(ex.sum)
                             ? 1.0f / ex.sum
                             : std::numeric_limits<float>::quiet_NaN();
    previous = {ex.out, factor, static_cast<std::uint16_t*>(rows[j].y), stream};
  }
  if (count > 0) StoreRest<kBF16>(previous, 0, blocks_end(count - 1), rows[count - 1].n);
  if (stream) end_streaming_stores();
}

void SoftmaxRowsBF16(const Row16* rows, std::int64_t count, float scale, float* scratch,
                     bool stream) {
  SoftmaxRows16<true>(rows, count, scale, scratch, stream);
}
void SoftmaxRowsF16(const Row16* rows, std::int64_t count, float scale, float* scratch,
                    bool stream) {
  SoftmaxRows16<false>(rows, count, scale, scratch, stream);
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(SoftmaxRowsBF16);
HWY_EXPORT(SoftmaxRowsF16);

void softmax_rows_16(DataType dtype, const Row16* rows, std::int64_t count, float scale,
                     float* scratch, bool stream) {
  switch (dtype) {
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(SoftmaxRowsBF16)(rows, count, scale, scratch, stream);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(SoftmaxRowsF16)(rows, count, scale, scratch, stream);
    default:
      throw_internal_error("softmax_rows_16", "dtype is not float16/bfloat16");
  }
}

void softmax_row_16(DataType dtype, const void* x, float scale, std::int64_t n, float* scratch,
                    void* out, bool stream) {
  const Row16 row{x, out, n};
  softmax_rows_16(dtype, &row, 1, scale, scratch, stream);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
