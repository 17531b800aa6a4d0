// The partial last vector of the row kernels (rows-inl.h's LoadN/StoreN, through ForEachVector)
// on every SIMD target this build dispatches to that the CPU supports: each row ends where an
// inaccessible page begins, so a kernel that reads or writes one element past a row faults. Every
// tail length up to several vectors, float32/float16/bfloat16 where the kernel takes them;
// results against a float64 reference (the kernels' own tests check them to the last bit).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/elementwise_kernels.h"
#include "src/ops/cpu/simd/norm_kernels.h"
#include "src/ops/cpu/simd/rotary_kernels.h"
#include "src/ops/cpu/simd/softmax_kernels.h"
#include "src/ops/cpu/simd/softmax_pipeline_kernels.h"
#include "tests/support/simd_targets.h"
#include "tileops/core/float16.h"

namespace tileops::ops::cpu {
namespace {

using testing::for_each_simd_target;

constexpr std::int64_t kMaxN = 3 * 16 + 5;  // past three AVX-512 float vectors

// A page of memory followed by an inaccessible one; row<T>(n) is n elements ending at the
// boundary, poisoned with 0xFF bytes (a NaN in every float format).
class GuardedRow {
 public:
  GuardedRow() : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
    void* p = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<unsigned char*>(p);
    if (mprotect(base_ + page_, page_, PROT_NONE) != 0) throw std::runtime_error("mprotect");
  }
  GuardedRow(const GuardedRow&) = delete;
  GuardedRow& operator=(const GuardedRow&) = delete;
  ~GuardedRow() { munmap(base_, 2 * page_); }

  template <typename T>
  T* row(std::int64_t n) {
    unsigned char* start = base_ + page_ - static_cast<std::size_t>(n) * sizeof(T);
    std::memset(start, 0xFF, static_cast<std::size_t>(n) * sizeof(T));
    return reinterpret_cast<T*>(start);
  }

 private:
  std::size_t page_;
  unsigned char* base_ = nullptr;
};

// One storage dtype as raw bits.
struct Format {
  DataType dtype;
  double tolerance;  // relative, one rounding to the dtype after float32 math
};
const Format kFormats[] = {
    {DataType::kFloat32, 1e-5}, {DataType::kFloat16, 2e-3}, {DataType::kBFloat16, 1e-2}};

// Writes v (n floats) into a guarded row of `dtype`, returning its start.
void* put(GuardedRow& g, DataType dtype, const std::vector<float>& v, std::int64_t n) {
  if (dtype == DataType::kFloat32) {
    float* p = g.row<float>(n);
    std::memcpy(p, v.data(), static_cast<std::size_t>(n) * sizeof(float));
    return p;
  }
  std::uint16_t* p = g.row<std::uint16_t>(n);
  for (std::int64_t i = 0; i < n; ++i) {
    p[i] = dtype == DataType::kFloat16 ? float_to_float16(v[i]) : float_to_bfloat16(v[i]);
  }
  return p;
}

// Element i of a row of `dtype` as float.
double get(const void* p, DataType dtype, std::int64_t i) {
  if (dtype == DataType::kFloat32) return static_cast<const float*>(p)[i];
  const std::uint16_t b = static_cast<const std::uint16_t*>(p)[i];
  return dtype == DataType::kFloat16 ? float16_to_float(b) : bfloat16_to_float(b);
}

std::vector<float> randoms(std::int64_t n, std::uint64_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> real(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = real(rng);
  return v;
}

void expect_near(double got, double want, double rel, const char* what, std::int64_t i) {
  ASSERT_LE(std::fabs(got - want), 1e-6 + rel * std::fabs(want))
      << what << " element " << i << ": got " << got << ", want " << want;
}

TEST(SimdTails, ElementwiseAndConvertStopAtTheRowEnd) {
  for_each_simd_target([] {
    for (const Format& f : kFormats) {
      SCOPED_TRACE(name_of(f.dtype));
      for (std::int64_t n = 1; n <= kMaxN; ++n) {
        SCOPED_TRACE(n);
        GuardedRow ga, gb, gout, gf;
        const auto av = randoms(n, 1 + static_cast<std::uint64_t>(n));
        const auto bv = randoms(n, 1000 + static_cast<std::uint64_t>(n));
        const void* a = put(ga, f.dtype, av, n);
        const void* b = put(gb, f.dtype, bv, n);
        void* out = put(gout, f.dtype, std::vector<float>(av.size(), NAN), n);
        elementwise_rows(ElementwiseOp::kAdd, f.dtype, a, b, n, out);
        for (std::int64_t i = 0; i < n; ++i) {
          expect_near(get(out, f.dtype, i), get(a, f.dtype, i) + get(b, f.dtype, i), f.tolerance,
                      "add", i);
        }
        // load_f32 then store_f32 is the identity on a row of dtype.
        float* wide = gf.row<float>(n);
        load_f32(a, f.dtype, 1, n, wide);
        for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(wide[i], get(a, f.dtype, i)) << i;
        store_f32(wide, out, f.dtype, 1, n);
        for (std::int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(get(out, f.dtype, i), get(a, f.dtype, i)) << i;
        }
      }
    }
  });
}

TEST(SimdTails, NormKernelsStopAtTheRowEnd) {
  for_each_simd_target([] {
    for (const Format& f : kFormats) {
      SCOPED_TRACE(name_of(f.dtype));
      for (std::int64_t n = 1; n <= kMaxN; ++n) {
        SCOPED_TRACE(n);
        GuardedRow ga, gb, gw, gout;
        const void* a = put(ga, f.dtype, randoms(n, 7 + static_cast<std::uint64_t>(n)), n);
        const void* b = put(gb, f.dtype, randoms(n, 70 + static_cast<std::uint64_t>(n)), n);
        float* w = gw.row<float>(n);
        const auto wv = randoms(n, 700 + static_cast<std::uint64_t>(n));
        std::memcpy(w, wv.data(), wv.size() * sizeof(float));
        double squares = 0.0;
        for (std::int64_t i = 0; i < n; ++i) squares += get(a, f.dtype, i) * get(a, f.dtype, i);
        expect_near(row_sum_of_squares(a, f.dtype, n), squares, 1e-5, "sum of squares", n);

        void* sum = put(gout, f.dtype, std::vector<float>(static_cast<std::size_t>(n), NAN), n);
        const float total = add_rows_sum_of_squares(a, b, f.dtype, n, sum);
        double want_total = 0.0;
        for (std::int64_t i = 0; i < n; ++i) {
          expect_near(get(sum, f.dtype, i), get(a, f.dtype, i) + get(b, f.dtype, i), f.tolerance,
                      "add", i);
          want_total += get(sum, f.dtype, i) * get(sum, f.dtype, i);
        }
        expect_near(total, want_total, 1e-5, "sum of rounded squares", n);

        GuardedRow g_row_weight;  // w as the row kernel reads it
        float* row_weight = g_row_weight.row<float>(n);
        arrange_row_weight(f.dtype, w, n, row_weight);
        scale_row_by_weight(a, row_weight, 0.5f, f.dtype, n, sum);
        for (std::int64_t i = 0; i < n; ++i) {
          expect_near(get(sum, f.dtype, i), get(a, f.dtype, i) * 0.5 * w[i], f.tolerance, "scale",
                      i);
        }
      }
    }
  });
}

TEST(SimdTails, Float32RowKernelsStopAtTheRowEnd) {
  for_each_simd_target([] {
    for (std::int64_t n = 2; n <= kMaxN; n += 2) {  // the rotations take pairs
      SCOPED_TRACE(n);
      GuardedRow gx, gc, gs, gout;
      const auto xv = randoms(n, 11 + static_cast<std::uint64_t>(n));
      const auto cv = randoms(n, 110 + static_cast<std::uint64_t>(n), -1.0f, 1.0f);
      const auto sv = randoms(n, 1100 + static_cast<std::uint64_t>(n), -1.0f, 1.0f);
      const auto* x = static_cast<const float*>(put(gx, DataType::kFloat32, xv, n));
      const auto* c = static_cast<const float*>(put(gc, DataType::kFloat32, cv, n));
      const auto* s = static_cast<const float*>(put(gs, DataType::kFloat32, sv, n));
      float* out = gout.row<float>(n);
      const std::int64_t half = n / 2;
      rotate_halves(x, c, s, n, out);
      for (std::int64_t i = 0; i < n; ++i) {
        const double partner = i < half ? x[i + half] : x[i - half];
        expect_near(out[i], double{x[i]} * c[i] + partner * s[i], 1e-5, "halves", i);
      }
      out = gout.row<float>(n);
      rotate_pairs(x, c, s, n, out);
      for (std::int64_t i = 0; i < n; ++i) {
        expect_near(out[i], double{x[i]} * c[i] + double{x[i ^ 1]} * s[i], 1e-5, "pairs", i);
      }
      out = gout.row<float>(n);
      exp_row(x, n, out);
      for (std::int64_t i = 0; i < n; ++i)
        expect_near(out[i], std::exp(double{x[i]}), 1e-6, "exp", i);

      double max = -INFINITY;
      for (std::int64_t i = 0; i < n; ++i) max = std::max(max, 1.5 * x[i]);
      ASSERT_EQ(scaled_max(x, 1.5f, n), static_cast<float>(max));
      out = gout.row<float>(n);
      softmax_row(x, 1.5f, n, out);
      double total = 0.0;
      for (std::int64_t i = 0; i < n; ++i) total += std::exp(1.5 * x[i] - max);
      for (std::int64_t i = 0; i < n; ++i) {
        expect_near(out[i], std::exp(1.5 * x[i] - max) / total, 1e-5, "softmax", i);
      }
    }
  });
}

TEST(SimdTails, Softmax16StopsAtTheRowEnd) {
  for_each_simd_target([] {
    for (const Format& f : {kFormats[1], kFormats[2]}) {
      SCOPED_TRACE(name_of(f.dtype));
      for (std::int64_t n = 1; n <= kMaxN; ++n) {
        SCOPED_TRACE(n);
        GuardedRow gx, gout, gscratch;
        const void* x = put(gx, f.dtype, randoms(n, 13 + static_cast<std::uint64_t>(n)), n);
        void* out = put(gout, f.dtype, std::vector<float>(static_cast<std::size_t>(n), NAN), n);
        softmax_row_pipelined(f.dtype, x, 0.75f, n, gscratch.row<float>(n), out);
        double max = -INFINITY;
        for (std::int64_t i = 0; i < n; ++i) max = std::max(max, 0.75 * get(x, f.dtype, i));
        double total = 0.0;
        for (std::int64_t i = 0; i < n; ++i) total += std::exp(0.75 * get(x, f.dtype, i) - max);
        for (std::int64_t i = 0; i < n; ++i) {
          expect_near(get(out, f.dtype, i), std::exp(0.75 * get(x, f.dtype, i) - max) / total,
                      f.tolerance, "softmax", i);
        }
      }
    }
  });
}

}  // namespace
}  // namespace tileops::ops::cpu
