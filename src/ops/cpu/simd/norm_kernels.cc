#include "src/ops/cpu/simd/norm_kernels.h"

#include <algorithm>

#include "src/ops/cpu/streaming.h"
#include "tileops/core/error.h"
#include "tileops/core/float16.h"
#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/norm_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Σ x² of the row; bfloat16 rows, whose order within a sum does not matter, are read as split
// 32-bit pairs, which saves the lane shuffles of widening.
template <class E>
float SumOfSquaresT(const typename E::T* x, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  auto a2 = hn::Zero(d);
  auto a3 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    hn::Vec<decltype(d)> v0, v1, v2, v3;
    if constexpr (E::kPairs) {
      E::LoadPairs(d, x + i, v0, v1);
      E::LoadPairs(d, x + i + 2 * lanes, v2, v3);
    } else {
      v0 = E::Load(d, x + i);
      v1 = E::Load(d, x + i + lanes);
      v2 = E::Load(d, x + i + 2 * lanes);
      v3 = E::Load(d, x + i + 3 * lanes);
    }
    a0 = hn::MulAdd(v0, v0, a0);
    a1 = hn::MulAdd(v1, v1, a1);
    a2 = hn::MulAdd(v2, v2, a2);
    a3 = hn::MulAdd(v3, v3, a3);
  }
  ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
    const auto v = Load<E>(d, x + j, part);  // zero past the row: adds nothing
    a0 = hn::MulAdd(v, v, a0);
  });
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

// sum = round(a + b); returns Σ sum² of the rounded values.
template <class E>
float AddRowsSumOfSquaresT(const typename E::T* a, const typename E::T* b, std::int64_t n,
                           typename E::T* sum) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    hn::Vec<decltype(d)> r0, r1;
    if constexpr (E::kPairs) {
      hn::Vec<decltype(d)> ae, ao, be, bo;
      E::LoadPairs(d, a + i, ae, ao);
      E::LoadPairs(d, b + i, be, bo);
      r0 = hn::Add(ae, be);
      r1 = hn::Add(ao, bo);
      E::StorePairsRounded(d, r0, r1, sum + i);
    } else {
      const auto s0 = hn::Add(E::Load(d, a + i), E::Load(d, b + i));
      const auto s1 = hn::Add(E::Load(d, a + i + lanes), E::Load(d, b + i + lanes));
      r0 = E::StoreRounded(d, s0, sum + i);
      r1 = E::StoreRounded(d, s1, sum + i + lanes);
    }
    a0 = hn::MulAdd(r0, r0, a0);
    a1 = hn::MulAdd(r1, r1, a1);
  }
  ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
    const auto s = hn::Add(Load<E>(d, a + j, part), Load<E>(d, b + j, part));
    const auto r = StoreRounded<E>(d, s, sum + j, part);
    a0 = hn::MulAdd(r, r, a0);
  });
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
}

template <class E>
void ScaleRowByWeightT(const typename E::T* x, const float* w, float scale, std::int64_t n,
                       typename E::T* out, bool stream, const void* next, std::int64_t next_bytes) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto s = hn::Set(d, scale);
  // This pass reads x from cache, so memory would idle: pull the caller's next row into L2 at
  // the pace of this one, a cache line per line of x consumed.
  const char* ahead = static_cast<const char*>(next);
  const char* ahead_end = ahead + (next == nullptr ? 0 : next_bytes);
  constexpr std::int64_t kLine = 64;
  const std::int64_t step_bytes = 2 * lanes * static_cast<std::int64_t>(sizeof(typename E::T));
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    for (std::int64_t b = 0; b < step_bytes && ahead < ahead_end; b += kLine, ahead += kLine) {
      __builtin_prefetch(ahead, 0, 2);
    }
    if constexpr (E::kPairs) {  // w's block is [even | odd] (ArrangeRowWeight)
      hn::Vec<decltype(d)> even, odd;
      E::LoadPairs(d, x + i, even, odd);
      E::StorePairs(d, hn::Mul(hn::Mul(even, s), hn::LoadU(d, w + i)),
                    hn::Mul(hn::Mul(odd, s), hn::LoadU(d, w + i + lanes)), out + i, stream);
    } else {
      const auto y0 = hn::Mul(hn::Mul(E::Load(d, x + i), s), hn::LoadU(d, w + i));
      const auto y1 = hn::Mul(hn::Mul(E::Load(d, x + i + lanes), s), hn::LoadU(d, w + i + lanes));
      E::Store2(d, y0, y1, out + i, stream);
    }
  }
  ForEachVector(d, i, n, [&](std::int64_t j, auto part) {
    const auto y = hn::Mul(hn::Mul(Load<E>(d, x + j, part), s), Load<F32Elem>(d, w + j, part));
    Store<E>(d, y, out + j, part, stream);
  });
  if (stream) end_streaming_stores();
}

float SumOfSquares(const float* x, std::int64_t n) { return SumOfSquaresT<F32Elem>(x, n); }

void AddRows(const float* a, const float* b, std::int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  ForEachVector(d, 0, n, [&](std::int64_t i, auto part) {
    Store<F32Elem>(d, hn::Add(Load<F32Elem>(d, a + i, part), Load<F32Elem>(d, b + i, part)),
                   out + i, part);
  });
}

void ScaleByWeight(const float* x, const float* w, float scale, std::int64_t n, float* out) {
  ScaleRowByWeightT<F32Elem>(x, w, scale, n, out, false, nullptr, 0);
}

// The row kernels of any float dtype, one export each.
constexpr const char* kWhat = "cpu norm kernels";

float RowSumOfSquares(DataType dtype, const void* x, std::int64_t n) {
  return VisitFloat(dtype, kWhat, [&](auto elem) {
    using E = decltype(elem);
    return SumOfSquaresT<E>(static_cast<const typename E::T*>(x), n);
  });
}

float AddRowsSumOfSquares(DataType dtype, const void* a, const void* b, std::int64_t n, void* sum) {
  return VisitFloat(dtype, kWhat, [&](auto elem) {
    using T = typename decltype(elem)::T;
    return AddRowsSumOfSquaresT<decltype(elem)>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                n, static_cast<T*>(sum));
  });
}

// ScaleRowByWeightT's weight: for element types read as split pairs, each whole block of
// 2·Lanes weights as [even-indexed | odd-indexed], the order of the pairs' vectors; the rest as is.
void ArrangeRowWeight(DataType dtype, const float* w, std::int64_t n, float* out) {
  VisitFloat(dtype, kWhat, [&](auto elem) {
    const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(hn::ScalableTag<float>()));
    std::int64_t i = 0;
    if constexpr (decltype(elem)::kPairs) {
      for (; i + 2 * lanes <= n; i += 2 * lanes) {
        for (std::int64_t k = 0; k < lanes; ++k) {
          out[i + k] = w[i + 2 * k];
          out[i + lanes + k] = w[i + 2 * k + 1];
        }
      }
    }
    std::copy(w + i, w + n, out + i);
  });
}

void ScaleRowByWeight(DataType dtype, const void* x, const float* w, float scale, std::int64_t n,
                      void* out, bool stream, const void* next, std::int64_t next_bytes) {
  VisitFloat(dtype, kWhat, [&](auto elem) {
    using T = typename decltype(elem)::T;
    ScaleRowByWeightT<decltype(elem)>(static_cast<const T*>(x), w, scale, n, static_cast<T*>(out),
                                      stream, next, next_bytes);
  });
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(SumOfSquares);
HWY_EXPORT(AddRows);
HWY_EXPORT(ScaleByWeight);
HWY_EXPORT(RowSumOfSquares);
HWY_EXPORT(AddRowsSumOfSquares);
HWY_EXPORT(ScaleRowByWeight);
HWY_EXPORT(ArrangeRowWeight);

float sum_of_squares(const float* x, std::int64_t n) {
  return TILEOPS_DYNAMIC_DISPATCH(SumOfSquares)(x, n);
}

void add_rows(const float* a, const float* b, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(AddRows)(a, b, n, out);
}

void scale_by_weight(const float* x, const float* w, float scale, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(ScaleByWeight)(x, w, scale, n, out);
}

float row_sum_of_squares(const void* x, DataType dtype, std::int64_t n) {
  return TILEOPS_DYNAMIC_DISPATCH(RowSumOfSquares)(dtype, x, n);
}

float add_rows_sum_of_squares(const void* a, const void* b, DataType dtype, std::int64_t n,
                              void* sum) {
  return TILEOPS_DYNAMIC_DISPATCH(AddRowsSumOfSquares)(dtype, a, b, n, sum);
}

void arrange_row_weight(DataType dtype, const float* w, std::int64_t n, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(ArrangeRowWeight)(dtype, w, n, out);
}

void scale_row_by_weight(const void* x, const float* w, float scale, DataType dtype, std::int64_t n,
                         void* out, bool stream, const void* next, std::int64_t next_bytes) {
  TILEOPS_DYNAMIC_DISPATCH(ScaleRowByWeight)(dtype, x, w, scale, n, out, stream, next, next_bytes);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
