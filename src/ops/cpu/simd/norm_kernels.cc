#include "src/ops/cpu/simd/norm_kernels.h"

#include "src/ops/cpu/streaming.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/norm_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// How a row of one dtype is read as float32 vectors and written back, rounding to nearest even.
// StoreRounded also returns the stored value as float32, so that a kernel can go on with exactly
// what it wrote without reading it back.
struct F32Row {
  using T = float;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* p) {
    return hn::LoadU(d, p);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, T* p, bool stream) {
    StoreMaybeStreaming(v, d, p, stream);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, T* p) {
    hn::StoreU(v, d, p);
    return v;
  }
  static float ToF32(T x) { return x; }
  static T FromF32(float x) { return x; }
};

struct BF16Row {
  using T = std::uint16_t;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* p) {
    return LoadBF16AsF32(d, p);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, T* p, bool stream) {
    StoreF32AsBF16(d, v, p, stream);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, T* p) {
    const hn::Rebind<std::uint32_t, D> du32;
    const hn::Rebind<std::int32_t, D> di32;
    const hn::Rebind<std::uint16_t, D> du16;
    const auto high = RoundToBF16High(d, v);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, hn::ShiftRight<16>(high))), du16, p);
    return hn::BitCast(d, hn::And(high, hn::Set(du32, 0xffff0000u)));
  }
  static float ToF32(T x) { return bfloat16_to_float(x); }
  static T FromF32(float x) { return float_to_bfloat16(x); }
};

struct F16Row {
  using T = std::uint16_t;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const T* p) {
    return LoadF16AsF32(d, p);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, T* p, bool stream) {
    StoreF32AsF16(d, v, p, stream);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> StoreRounded(D d, hn::Vec<D> v, T* p) {
    if constexpr (kExactF16Vectors) {
      const hn::Rebind<hwy::float16_t, D> dh;
      const auto h = hn::DemoteTo(dh, v);
      hn::StoreU(h, dh, reinterpret_cast<hwy::float16_t*>(p));
      return hn::PromoteTo(d, h);
    } else {
      StoreF32AsF16(d, v, p);
      return LoadF16AsF32(d, p);
    }
  }
  static float ToF32(T x) { return float16_to_float(x); }
  static T FromF32(float x) { return float_to_float16(x); }
};

template <class Row>
float RowSumOfSquares(const typename Row::T* x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  auto a2 = hn::Zero(d);
  auto a3 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    const auto v0 = Row::Load(d, x + i);
    const auto v1 = Row::Load(d, x + i + lanes);
    const auto v2 = Row::Load(d, x + i + 2 * lanes);
    const auto v3 = Row::Load(d, x + i + 3 * lanes);
    a0 = hn::MulAdd(v0, v0, a0);
    a1 = hn::MulAdd(v1, v1, a1);
    a2 = hn::MulAdd(v2, v2, a2);
    a3 = hn::MulAdd(v3, v3, a3);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto v = Row::Load(d, x + i);
    a0 = hn::MulAdd(v, v, a0);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) {
    const float v = Row::ToF32(x[i]);
    sum += v * v;
  }
  return sum;
}

template <class Row>
float AddRowsSumOfSquaresT(const typename Row::T* a, const typename Row::T* b, std::int64_t n,
                           typename Row::T* sum) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto s0 = hn::Add(Row::Load(d, a + i), Row::Load(d, b + i));
    const auto s1 = hn::Add(Row::Load(d, a + i + lanes), Row::Load(d, b + i + lanes));
    const auto r0 = Row::StoreRounded(d, s0, sum + i);
    const auto r1 = Row::StoreRounded(d, s1, sum + i + lanes);
    a0 = hn::MulAdd(r0, r0, a0);
    a1 = hn::MulAdd(r1, r1, a1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto r = Row::StoreRounded(d, hn::Add(Row::Load(d, a + i), Row::Load(d, b + i)), sum + i);
    a0 = hn::MulAdd(r, r, a0);
  }
  float total = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  for (; i < n; ++i) {
    sum[i] = Row::FromF32(Row::ToF32(a[i]) + Row::ToF32(b[i]));
    const float r = Row::ToF32(sum[i]);
    total += r * r;
  }
  return total;
}

template <class Row>
void ScaleRowByWeightT(const typename Row::T* x, const float* w, float scale, std::int64_t n,
                       typename Row::T* out, bool stream, const void* next,
                       std::int64_t next_bytes) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  // This pass reads x from cache, so memory would idle: pull the caller's next row into L2 at
  // the pace of this one, a cache line per line of x consumed.
  const char* ahead = static_cast<const char*>(next);
  const char* ahead_end = ahead + (next == nullptr ? 0 : next_bytes);
  constexpr std::int64_t kLine = 64;
  const std::int64_t step_bytes = 2 * lanes * static_cast<std::int64_t>(sizeof(typename Row::T));
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    for (std::int64_t b = 0; b < step_bytes && ahead < ahead_end; b += kLine, ahead += kLine) {
      __builtin_prefetch(ahead, 0, 2);
    }
    const auto y0 = hn::Mul(hn::Mul(Row::Load(d, x + i), s), hn::LoadU(d, w + i));
    const auto y1 = hn::Mul(hn::Mul(Row::Load(d, x + i + lanes), s), hn::LoadU(d, w + i + lanes));
    Row::Store(d, y0, out + i, stream);
    Row::Store(d, y1, out + i + lanes, stream);
  }
  for (; i + lanes <= n; i += lanes) {
    Row::Store(d, hn::Mul(hn::Mul(Row::Load(d, x + i), s), hn::LoadU(d, w + i)), out + i, stream);
  }
  if (stream) end_streaming_stores();
  for (; i < n; ++i) out[i] = Row::FromF32(Row::ToF32(x[i]) * scale * w[i]);
}

float SumOfSquares(const float* x, std::int64_t n) { return RowSumOfSquares<F32Row>(x, n); }

void AddRows(const float* a, const float* b, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

void ScaleByWeight(const float* x, const float* w, float scale, std::int64_t n, float* out,
                   bool stream) {
  ScaleRowByWeightT<F32Row>(x, w, scale, n, out, stream, nullptr, 0);
}

void ScaleRowByWeightF32(const void* x, const float* w, float scale, std::int64_t n, void* out,
                         bool stream, const void* next, std::int64_t next_bytes) {
  ScaleRowByWeightT<F32Row>(static_cast<const float*>(x), w, scale, n, static_cast<float*>(out),
                            stream, next, next_bytes);
}

// One entry point per dtype, since HWY_EXPORT takes plain functions.
float SumOfSquaresF16(const void* x, std::int64_t n) {
  return RowSumOfSquares<F16Row>(static_cast<const std::uint16_t*>(x), n);
}
// bfloat16 rows whose order within a sum does not matter are read as split 32-bit pairs, which
// saves the lane shuffles of widening and narrowing.
float SumOfSquaresBF16(const void* row, std::int64_t n) {
  const std::uint16_t* x = static_cast<const std::uint16_t*>(row);
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  auto a2 = hn::Zero(d);
  auto a3 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    hn::Vec<decltype(d)> e0, o0, e1, o1;
    LoadBF16PairsAsF32(d, x + i, e0, o0);
    LoadBF16PairsAsF32(d, x + i + 2 * lanes, e1, o1);
    a0 = hn::MulAdd(e0, e0, a0);
    a1 = hn::MulAdd(o0, o0, a1);
    a2 = hn::MulAdd(e1, e1, a2);
    a3 = hn::MulAdd(o1, o1, a3);
  }
  const float head = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  return head + RowSumOfSquares<BF16Row>(x + i, n - i);
}

float AddRowsSumOfSquaresBF16(const void* a_row, const void* b_row, std::int64_t n, void* sum_row) {
  const std::uint16_t* a = static_cast<const std::uint16_t*>(a_row);
  const std::uint16_t* b = static_cast<const std::uint16_t*>(b_row);
  std::uint16_t* sum = static_cast<std::uint16_t*>(sum_row);
  const hn::ScalableTag<float> d;
  const hn::Rebind<std::uint32_t, decltype(d)> du32;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto high_half = hn::Set(du32, 0xffff0000u);
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    hn::Vec<decltype(d)> ae, ao, be, bo;
    LoadBF16PairsAsF32(d, a + i, ae, ao);
    LoadBF16PairsAsF32(d, b + i, be, bo);
    const auto even = hn::And(RoundToBF16High(d, hn::Add(ae, be)), high_half);
    const auto odd = hn::And(RoundToBF16High(d, hn::Add(ao, bo)), high_half);
    hn::StoreU(hn::Or(hn::ShiftRight<16>(even), odd), du32,
               reinterpret_cast<std::uint32_t*>(sum + i));
    const auto re = hn::BitCast(d, even);
    const auto ro = hn::BitCast(d, odd);
    a0 = hn::MulAdd(re, re, a0);
    a1 = hn::MulAdd(ro, ro, a1);
  }
  const float head = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  return head + AddRowsSumOfSquaresT<BF16Row>(a + i, b + i, n - i, sum + i);
}

template <class Row>
float AddRowsSumOfSquaresAs(const void* a, const void* b, std::int64_t n, void* sum) {
  using T = typename Row::T;
  return AddRowsSumOfSquaresT<Row>(static_cast<const T*>(a), static_cast<const T*>(b), n,
                                   static_cast<T*>(sum));
}
float AddRowsSumOfSquaresF32(const void* a, const void* b, std::int64_t n, void* sum) {
  return AddRowsSumOfSquaresAs<F32Row>(a, b, n, sum);
}
float AddRowsSumOfSquaresF16(const void* a, const void* b, std::int64_t n, void* sum) {
  return AddRowsSumOfSquaresAs<F16Row>(a, b, n, sum);
}

void ScaleRowByWeightF16(const void* x, const float* w, float scale, std::int64_t n, void* out,
                         bool stream, const void* next, std::int64_t next_bytes) {
  ScaleRowByWeightT<F16Row>(static_cast<const std::uint16_t*>(x), w, scale, n,
                            static_cast<std::uint16_t*>(out), stream, next, next_bytes);
}
void ScaleRowByWeightBF16(const void* x, const float* w, float scale, std::int64_t n, void* out,
                          bool stream, const void* next, std::int64_t next_bytes) {
  ScaleRowByWeightT<BF16Row>(static_cast<const std::uint16_t*>(x), w, scale, n,
                             static_cast<std::uint16_t*>(out), stream, next, next_bytes);
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(SumOfSquares);
HWY_EXPORT(AddRows);
HWY_EXPORT(ScaleByWeight);
HWY_EXPORT(SumOfSquaresF16);
HWY_EXPORT(SumOfSquaresBF16);
HWY_EXPORT(AddRowsSumOfSquaresF32);
HWY_EXPORT(AddRowsSumOfSquaresF16);
HWY_EXPORT(AddRowsSumOfSquaresBF16);
HWY_EXPORT(ScaleRowByWeightF32);
HWY_EXPORT(ScaleRowByWeightF16);
HWY_EXPORT(ScaleRowByWeightBF16);

namespace {
[[noreturn]] void not_a_float_row() {
  throw_internal_error("cpu norm kernels", "dtype is not float32/float16/bfloat16");
}
}  // namespace

float sum_of_squares(const float* x, std::int64_t n) {
  return TILEOPS_DYNAMIC_DISPATCH(SumOfSquares)(x, n);
}

void add_rows(const float* a, const float* b, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(AddRows)(a, b, n, out);
}

void scale_by_weight(const float* x, const float* w, float scale, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(ScaleByWeight)(x, w, scale, n, out, false);
}

float row_sum_of_squares(const void* x, DataType dtype, std::int64_t n) {
  switch (dtype) {
    case DataType::kFloat32:
      return TILEOPS_DYNAMIC_DISPATCH(SumOfSquares)(static_cast<const float*>(x), n);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(SumOfSquaresF16)(x, n);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(SumOfSquaresBF16)(x, n);
    default:
      not_a_float_row();
  }
}

float add_rows_sum_of_squares(const void* a, const void* b, DataType dtype, std::int64_t n,
                              void* sum) {
  switch (dtype) {
    case DataType::kFloat32:
      return TILEOPS_DYNAMIC_DISPATCH(AddRowsSumOfSquaresF32)(a, b, n, sum);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(AddRowsSumOfSquaresF16)(a, b, n, sum);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(AddRowsSumOfSquaresBF16)(a, b, n, sum);
    default:
      not_a_float_row();
  }
}

void scale_row_by_weight(const void* x, const float* w, float scale, DataType dtype, std::int64_t n,
                         void* out, bool stream, const void* next, std::int64_t next_bytes) {
  switch (dtype) {
    case DataType::kFloat32:
      return TILEOPS_DYNAMIC_DISPATCH(ScaleRowByWeightF32)(x, w, scale, n, out, stream, next,
                                                           next_bytes);
    case DataType::kFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ScaleRowByWeightF16)(x, w, scale, n, out, stream, next,
                                                           next_bytes);
    case DataType::kBFloat16:
      return TILEOPS_DYNAMIC_DISPATCH(ScaleRowByWeightBF16)(x, w, scale, n, out, stream, next,
                                                            next_bytes);
    default:
      not_a_float_row();
  }
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
