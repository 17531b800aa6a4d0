#include "src/ops/cpu/simd/delta_rule_kernels.h"

#include "tileops/runtime/cpu_info.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/ops/cpu/simd/delta_rule_kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// Per-target like this file, so after highway.h (a separate block keeps clang-format's order).

#include "src/ops/cpu/simd/rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tileops::ops::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Both passes walk the state column block by column block (one vector wide, the tail through
// ForEachVector), so each block's accumulator stays in a register over all rows.
void DeltaDecayAndProject(float* s, std::int64_t rows, std::int64_t n, float decay, const float* x,
                          float* out) {
  const hn::ScalableTag<float> d;
  const auto e = hn::Set(d, decay);
  ForEachVector(d, 0, n, [&](std::int64_t j, auto part) {
    auto acc = hn::Zero(d);
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row = s + r * n + j;
      const auto v = hn::Mul(Load<F32Elem>(d, row, part), e);
      Store<F32Elem>(d, v, row, part);
      acc = hn::MulAdd(hn::Set(d, x[r]), v, acc);
    }
    Store<F32Elem>(d, acc, out + j, part);
  });
}

void DeltaUpdateAndProject(float* s, std::int64_t rows, std::int64_t n, const float* a,
                           const float* delta, const float* x, float* out) {
  const hn::ScalableTag<float> d;
  ForEachVector(d, 0, n, [&](std::int64_t j, auto part) {
    const auto dv = Load<F32Elem>(d, delta + j, part);
    auto acc = hn::Zero(d);
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row = s + r * n + j;
      const auto v = hn::MulAdd(hn::Set(d, a[r]), dv, Load<F32Elem>(d, row, part));
      Store<F32Elem>(d, v, row, part);
      acc = hn::MulAdd(hn::Set(d, x[r]), v, acc);
    }
    Store<F32Elem>(d, acc, out + j, part);
  });
}

// Four rows of c and two vectors of columns per block: 8 accumulators, 6 loads per 8 FMAs.
void DeltaMatmul(const float* a, std::int64_t lda, std::int64_t m, const float* b, std::int64_t ldb,
                 std::int64_t depth, std::int64_t n, float* c, std::int64_t ldc, bool accumulate) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const float* a0 = a + i * lda;
    float* c0 = c + i * ldc;
    std::int64_t j = 0;
    for (; j + 2 * lanes <= n; j += 2 * lanes) {
      hn::Vec<decltype(d)> acc[4][2];
      for (int x = 0; x < 4; ++x) {
        acc[x][0] = accumulate ? hn::LoadU(d, c0 + x * ldc + j) : hn::Zero(d);
        acc[x][1] = accumulate ? hn::LoadU(d, c0 + x * ldc + j + lanes) : hn::Zero(d);
      }
      for (std::int64_t r = 0; r < depth; ++r) {
        const auto b0 = hn::LoadU(d, b + r * ldb + j);
        const auto b1 = hn::LoadU(d, b + r * ldb + j + lanes);
        for (int x = 0; x < 4; ++x) {
          const auto ax = hn::Set(d, a0[x * lda + r]);
          acc[x][0] = hn::MulAdd(ax, b0, acc[x][0]);
          acc[x][1] = hn::MulAdd(ax, b1, acc[x][1]);
        }
      }
      for (int x = 0; x < 4; ++x) {
        hn::StoreU(acc[x][0], d, c0 + x * ldc + j);
        hn::StoreU(acc[x][1], d, c0 + x * ldc + j + lanes);
      }
    }
    ForEachVector(d, j, n, [&](std::int64_t jj, auto part) {
      hn::Vec<decltype(d)> acc[4];
      for (int x = 0; x < 4; ++x) {
        acc[x] = accumulate ? Load<F32Elem>(d, c0 + x * ldc + jj, part) : hn::Zero(d);
      }
      for (std::int64_t r = 0; r < depth; ++r) {
        const auto bv = Load<F32Elem>(d, b + r * ldb + jj, part);
        for (int x = 0; x < 4; ++x) acc[x] = hn::MulAdd(hn::Set(d, a0[x * lda + r]), bv, acc[x]);
      }
      for (int x = 0; x < 4; ++x) Store<F32Elem>(d, acc[x], c0 + x * ldc + jj, part);
    });
  }
  for (; i < m; ++i) {
    const float* ai = a + i * lda;
    float* ci = c + i * ldc;
    ForEachVector(d, 0, n, [&](std::int64_t j, auto part) {
      auto acc = accumulate ? Load<F32Elem>(d, ci + j, part) : hn::Zero(d);
      for (std::int64_t r = 0; r < depth; ++r) {
        acc = hn::MulAdd(hn::Set(d, ai[r]), Load<F32Elem>(d, b + r * ldb + j, part), acc);
      }
      Store<F32Elem>(d, acc, ci + j, part);
    });
  }
}

}  // namespace tileops::ops::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tileops::ops::cpu {

HWY_EXPORT(DeltaDecayAndProject);
HWY_EXPORT(DeltaUpdateAndProject);
HWY_EXPORT(DeltaMatmul);

void delta_decay_and_project(float* s, std::int64_t rows, std::int64_t n, float decay,
                             const float* x, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(DeltaDecayAndProject)(s, rows, n, decay, x, out);
}

void delta_update_and_project(float* s, std::int64_t rows, std::int64_t n, const float* a,
                              const float* delta, const float* x, float* out) {
  TILEOPS_DYNAMIC_DISPATCH(DeltaUpdateAndProject)(s, rows, n, a, delta, x, out);
}

void delta_matmul(const float* a, std::int64_t lda, std::int64_t m, const float* b,
                  std::int64_t ldb, std::int64_t depth, std::int64_t n, float* c, std::int64_t ldc,
                  bool accumulate) {
  TILEOPS_DYNAMIC_DISPATCH(DeltaMatmul)(a, lda, m, b, ldb, depth, n, c, ldc, accumulate);
}

}  // namespace tileops::ops::cpu
#endif  // HWY_ONCE
