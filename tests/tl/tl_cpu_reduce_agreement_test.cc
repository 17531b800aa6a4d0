// The cpu backend against the interpreter on the same inputs, reductions: row sums, maxima,
// minima and means, softmax and matmul, which sum in another order, within the ulps stated below;
// integer reductions (and float -> integer -> float round trips) bit for bit.
#include <cstdlib>
#include <cstring>

#include "tests/tl/tl_cpu_agreement.h"

namespace tileops::testing::tl_test {
namespace {

// Narrow integer reductions along the rows of an 8x16 tile in a loop (wrapping sums and products,
// which GCC 12 miscompiled at -O3 from an int64 accumulator of cast chains) and float -> integer
// -> float casts of values in (-1, 0] (an integer's zero is +0; GCC folded the casts into a
// rounding that kept -0): bit for bit as the interpreter, which matches the direct computation.
TEST(TlCpuAgreement, NarrowIntegerReductionsAndFloatIntegerRoundTrips) {
  const auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_narrow",
        [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows) {
          const tl::Value tx = tl::tensor(x, {rows, 16}),
                          to = tl::tensor(out, {tl::floordiv(rows, 8), 2, 16});
          for (tl::Value t : tl::range(tl::block_idx(), tl::ceildiv(rows, 8), tl::block_num())) {
            const tl::Value v = tl::load(tx, {8, 16}, {t * 8, 0});
            const tl::Value sum = tl::reduce_sum(v, {0}).to(DataType::kInt32);
            const tl::Value prod = tl::reduce_prod(v, {0}).to(DataType::kInt32);
            tl::store(tl::reshape(tl::concat({sum, prod}, 0), {1, 2, 16}), to, {t, 0, 0});
          }
        },
        o);
  };
  std::mt19937_64 rng(12);
  const std::int64_t rows = 24;
  for (DataType dtype : {DataType::kInt8, DataType::kUInt8, DataType::kInt16}) {
    const double lo = dtype == DataType::kUInt8 ? 0 : -6;
    TensorStorage x = random_tensor({rows, 16}, dtype, rng, Layout::kContiguous, lo, lo + 12);
    TensorStorage e = poisoned({rows / 8, 2, 16}, DataType::kInt32),
                  a = poisoned({rows / 8, 2, 16}, DataType::kInt32);
    make(kInterp).launch(2, x, e, rows);
    make(kCpu).launch(2, x, a, rows);
    expect_same_bytes(e, a, name_of(dtype).data());
    const std::vector<double> xv = to_doubles(x);
    std::vector<double> want;
    for (std::int64_t t = 0; t < rows / 8; ++t) {
      for (int which = 0; which < 2; ++which) {
        for (int c = 0; c < 16; ++c) {
          std::int64_t acc = which;
          for (int r = 0; r < 8; ++r) {
            const auto v =
                static_cast<std::int64_t>(xv[static_cast<std::size_t>((t * 8 + r) * 16 + c)]);
            acc = which == 0 ? acc + v : acc * v;
          }
          want.push_back(dtype == DataType::kInt8    ? static_cast<std::int8_t>(acc)
                         : dtype == DataType::kUInt8 ? static_cast<std::uint8_t>(acc)
                                                     : static_cast<std::int16_t>(acc));
        }
      }
    }
    EXPECT_EQ(compare(a, want, {0, 0}), "") << name_of(dtype);
  }
  // One row per integer dtype in between: int64, int32, int16, int8.
  const std::vector<Fn> round_trips = {[](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt64).to(DataType::kFloat32);
                                       },
                                       [](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt32).to(DataType::kFloat32);
                                       },
                                       [](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt16).to(DataType::kFloat32);
                                       },
                                       [](const tl::Value& v, const tl::Value&) {
                                         return v.to(DataType::kInt8).to(DataType::kFloat32);
                                       }};
  const std::vector<double> xs = {-0.3, -0.0, 0.2, -0.7, -1.2, 0.0, -0.49, 5.0, -0.5, 0.5, -2.5};
  const auto n = static_cast<std::int64_t>(xs.size());
  const auto n_fns = static_cast<std::int64_t>(round_trips.size());
  TensorStorage x({n}, DataType::kFloat32);
  from_doubles(x, xs);
  TensorStorage e = poisoned({n_fns, n}, DataType::kFloat32),
                a = poisoned({n_fns, n}, DataType::kFloat32);
  elementwise_kernel(round_trips, kInterp).launch(1, x, x, e, n);
  elementwise_kernel(round_trips, kCpu).launch(1, x, x, a, n);
  expect_same_bytes(e, a, "float -> integer -> float");
  const auto* got = static_cast<const float*>(a.data());
  for (std::int64_t f = 0; f < n_fns; ++f) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float g = got[f * n + i],
                  want = std::nearbyint(static_cast<float>(xs[static_cast<std::size_t>(i)]));
      EXPECT_EQ(std::memcmp(&g, &want, 4) == 0 || (want == 0 && g == 0 && !std::signbit(g)), true)
          << "row " << f << ", x " << xs[static_cast<std::size_t>(i)] << ": " << g;
    }
  }
}

// Distance in float32 ulps (both finite).
std::int64_t ulps(float a, float b) {
  std::int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = static_cast<std::int32_t>(0x80000000u - static_cast<std::uint32_t>(ia));
  if (ib < 0) ib = static_cast<std::int32_t>(0x80000000u - static_cast<std::uint32_t>(ib));
  return std::abs(static_cast<std::int64_t>(ia) - ib);
}

// covers: reduce_sum reduce_max reduce_mean softmax rms_norm matmul_acc
TEST(TlCpuAgreement, ReductionsSoftmaxAndMatmulWithinUlps) {
  // Rows of 300 (tiles of 512, padded with 0 / -inf where it matters): sums, max, mean, softmax,
  // rms_norm, the sum of exp (its own loop; softmax's rides along the exp's); then a 64x64x64
  // matmul_acc over two k steps.
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_rows",
        [](tl::GlobalAddress x, tl::GlobalAddress g, tl::GlobalAddress out, tl::GlobalAddress a,
           tl::GlobalAddress b, tl::GlobalAddress c, tl::Int rows) {
          const tl::Value tx = tl::tensor(x, {rows, 300}), tg = tl::tensor(g, {300});
          const tl::Value to = tl::tensor(out, {rows, 6, 300});
          for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, 512}, {r, 0});
            const tl::Value m = tl::load(tx, {1, 512}, {r, 0}, -INFINITY);
            const tl::Value gamma = tl::load(tg, {512}, {0});
            const tl::Value outs[] = {
                tl::broadcast_to(tl::reduce_sum(v, {1}, true), {1, 512}),
                tl::broadcast_to(tl::reduce_max(m, {1}, true), {1, 512}),
                tl::broadcast_to(tl::reduce_mean(v, {1}, true), {1, 512}),
                tl::softmax(m),
                tl::rms_norm(v, gamma, 1e-6),
                tl::broadcast_to(tl::reduce_sum(tl::exp(m), {1}, true), {1, 512})};
            for (int k = 0; k < 6; ++k) {
              tl::store(tl::reshape(outs[k], {1, 1, 512}), to, {r, k, 0});
            }
          }
          const tl::Value ta = tl::tensor(a, {64, 128}), tb = tl::tensor(b, {128, 64});
          tl::Var acc = tl::zeros({64, 64}, DataType::kFloat32);
          for (tl::Value k : tl::range(0, 2)) {
            acc = tl::matmul_acc(acc, tl::load(ta, {64, 64}, {0, k * 64}),
                                 tl::load(tb, {64, 64}, {k * 64, 0}));
          }
          tl::store(acc, tl::tensor(c, {64, 64}), {0, 0});
        },
        o);
  };
  std::mt19937_64 rng(9);
  const std::int64_t rows = 64;
  const auto f32 = DataType::kFloat32;
  TensorStorage x = random_tensor({rows, 300}, f32, rng), g = random_tensor({300}, f32, rng);
  TensorStorage a = random_tensor({64, 128}, f32, rng), b = random_tensor({128, 64}, f32, rng);
  TensorStorage e = poisoned({rows, 6, 300}, f32), o = poisoned({rows, 6, 300}, f32);
  TensorStorage ce = poisoned({64, 64}, f32), co = poisoned({64, 64}, f32);
  make(kInterp).launch(3, x, g, e, a, b, ce, rows);
  make(kCpu).launch(3, x, g, o, a, b, co, rows);
  const auto* pe = static_cast<const float*>(e.data());
  const auto* po = static_cast<const float*>(o.data());
  // Sums and means: one rounding of a double sum either way (<= 1 ulp apart); max exact;
  // softmax (float32 exp, then a sum) within 4 ulps; rms_norm divides by a sum (<= 2 ulps); sums
  // of exp add blocks of 64 in float32 (relative error <= 3 * 2^-24 before the rounding) of
  // terms within 2 ulps: within 4 ulps (docs/tile-language.md).
  const std::int64_t kMaxUlps[] = {1, 0, 1, 4, 2, 4};
  for (std::int64_t r = 0; r < rows; ++r) {
    for (int k = 0; k < 6; ++k) {
      for (int j = 0; j < 300; ++j) {
        const std::size_t i = static_cast<std::size_t>((r * 6 + k) * 300 + j);
        ASSERT_LE(ulps(pe[i], po[i]), kMaxUlps[k])
            << "row " << r << " output " << k << " col " << j << ": " << pe[i] << " vs " << po[i];
      }
    }
  }
  // matmul: float32 FMAs against the interpreter's double sums, 128 terms in [-2, 2).
  EXPECT_EQ(compare(co, to_doubles(ce), dot_tolerance(f32, 128)), "");
}

// Row max and min take a plain max loop and rerun a row the exact way when a sum of its elements
// is NaN: rows holding NaN (in the vector part and in the scalar tail of 100 = 3 * 32 + 4),
// infinities of both signs, only -inf, and finite values whose sum overflows, each against the
// interpreter (NaN for NaN, bit for bit otherwise).
TEST(TlCpuAgreement, RowMaxAndMinWithNaNAndInfinities) {
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_row_extremes",
        [](tl::GlobalAddress x, tl::GlobalAddress out, tl::Int rows) {
          const tl::Value tx = tl::tensor(x, {rows, 100}), to = tl::tensor(out, {rows, 2});
          for (tl::Value r : tl::range(tl::block_idx(), rows, tl::block_num())) {
            const tl::Value v = tl::load(tx, {1, 100}, {r, 0}) * 2;  // fused into the loops
            tl::store(tl::reduce_max(v, {1}, true), to, {r, 0});
            tl::store(tl::reduce_min(v, {1}, true), to, {r, 1});
          }
        },
        o);
  };
  const std::int64_t rows = 8;
  std::mt19937_64 rng(21);
  TensorStorage x = random_tensor({rows, 100}, DataType::kFloat32, rng);
  auto* px = static_cast<float*>(x.data());
  px[1 * 100 + 50] = NAN;
  px[2 * 100 + 7] = INFINITY;
  px[2 * 100 + 60] = -INFINITY;
  px[3 * 100 + 98] = NAN;
  for (int j = 0; j < 100; ++j) px[4 * 100 + j] = -INFINITY;
  for (int j = 0; j < 100; ++j) px[5 * 100 + j] = j % 2 == 0 ? 1e38f : -1e38f;
  px[5 * 100 + 3] = -INFINITY;
  px[6 * 100 + 31] = INFINITY;
  TensorStorage e = poisoned({rows, 2}, DataType::kFloat32);
  TensorStorage a = poisoned({rows, 2}, DataType::kFloat32);
  make(kInterp).launch(3, x, e, rows);
  make(kCpu).launch(3, x, a, rows);
  const auto* pe = static_cast<const float*>(e.data());
  const auto* pa = static_cast<const float*>(a.data());
  for (std::int64_t i = 0; i < rows * 2; ++i) {
    if (std::isnan(pe[i])) {
      EXPECT_TRUE(std::isnan(pa[i])) << "row " << i / 2 << " output " << i % 2 << ": " << pa[i];
    } else {
      EXPECT_EQ(std::memcmp(&pe[i], &pa[i], 4), 0)
          << "row " << i / 2 << " output " << i % 2 << ": " << pe[i] << " vs " << pa[i];
    }
  }
  EXPECT_TRUE(std::isnan(pe[2]) && std::isnan(pe[6]));  // the rows test what they say
  EXPECT_EQ(pe[4], INFINITY);
  EXPECT_EQ(pe[5], -INFINITY);
}

// Column max and min of a few columns (4 and 8: 16 lanes, lane q taking column q % C, then each
// column's lanes merged): NaN in one column, infinities of both signs in others, a column of only
// -inf, against the interpreter (NaN for NaN, bit for bit otherwise).
TEST(TlCpuAgreement, ColumnMaxAndMinOfFewColumnsWithNaNAndInfinities) {
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_column_extremes",
        [](tl::GlobalAddress x, tl::GlobalAddress out) {
          const tl::Value tx = tl::tensor(x, {48, 8}), to = tl::tensor(out, {4, 8});
          const tl::Value v = tl::load(tx, {48, 8}, {0, 0});
          const tl::Value four = tl::load(tx, {48, 4}, {0, 2});  // columns 2 to 5
          tl::store(tl::reduce_max(v, {0}, true), to, {0, 0});
          tl::store(tl::reduce_min(v, {0}, true), to, {1, 0});
          tl::store(tl::reduce_max(four, {0}, true), to, {2, 0});
          tl::store(tl::reduce_min(four, {0}, true), to, {3, 0});
        },
        o);
  };
  std::mt19937_64 rng(22);
  TensorStorage x = random_tensor({48, 8}, DataType::kFloat32, rng);
  auto* px = static_cast<float*>(x.data());
  px[17 * 8 + 3] = NAN;
  px[5 * 8 + 2] = INFINITY;
  px[40 * 8 + 4] = -INFINITY;
  for (int i = 0; i < 48; ++i) px[i * 8 + 6] = -INFINITY;
  TensorStorage e = poisoned({4, 8}, DataType::kFloat32);
  TensorStorage a = poisoned({4, 8}, DataType::kFloat32);
  make(kInterp).launch(1, x, e);
  make(kCpu).launch(1, x, a);
  const auto* pe = static_cast<const float*>(e.data());
  const auto* pa = static_cast<const float*>(a.data());
  for (int i = 0; i < 32; ++i) {
    if (i >= 20 && i % 8 >= 4) continue;  // rows 2 and 3 hold 4 columns
    if (std::isnan(pe[i])) {
      EXPECT_TRUE(std::isnan(pa[i])) << "output " << i << ": " << pa[i];
    } else {
      EXPECT_EQ(std::memcmp(&pe[i], &pa[i], 4), 0)
          << "output " << i << ": " << pe[i] << " vs " << pa[i];
    }
  }
  EXPECT_TRUE(std::isnan(pe[3]) && std::isnan(pe[8 + 3]) && std::isnan(pe[16 + 1]));
  EXPECT_EQ(pe[2], INFINITY);
  EXPECT_EQ(pe[8 + 6], -INFINITY);
}

// Integer row maxima and minima (the vectorised loops of the cpu backend, 128 bytes of
// accumulators; 300 lanes leave a tail for every width) agree with the interpreter and with the
// values themselves, extremes of each dtype included.
TEST(TlCpuAgreement, IntegerRowMaxAndMin) {
  auto make = [](const tl::Options& o) {
    return tl::jit(
        "agree_int_extremes",
        [](tl::GlobalAddress x, tl::GlobalAddress out) {
          const tl::Value v = tl::load(tl::tensor(x, {2, 300}), {2, 300}, {0, 0}) ^ 1;  // fused
          tl::store(tl::concat({tl::reduce_max(v, {1}), tl::reduce_min(v, {1})}, 0),
                    tl::tensor(out, {4}), {0});
        },
        o);
  };
  std::mt19937_64 rng(22);
  for (DataType dtype :
       {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64}) {
    const double lo = dtype == DataType::kUInt8 ? 0 : -100,
                 hi = dtype == DataType::kUInt8 ? 250 : 100;
    TensorStorage x = random_tensor({2, 300}, dtype, rng, Layout::kContiguous, lo, hi);
    std::vector<double> xv = to_doubles(x);
    // Row 0 reaches both ends of the dtype's range (the accumulators' initial values).
    const double top = dtype == DataType::kUInt8 ? 255
                       : dtype == DataType::kInt64
                           ? 9.2233720368547758e18
                           : std::ldexp(1.0, 8 * static_cast<int>(size_of(dtype)) - 1) - 1;
    const double bottom = dtype == DataType::kUInt8 ? 0 : -top - 1;
    if (dtype != DataType::kInt64) {  // int64's ends are not doubles
      xv[17] = top;
      xv[299] = bottom;
    }
    from_doubles(x, xv);
    TensorStorage e = poisoned({4}, dtype), a = poisoned({4}, dtype);
    make(kInterp).launch(1, x, e);
    make(kCpu).launch(1, x, a);
    expect_same_bytes(e, a, name_of(dtype).data());
    std::vector<double> want(4);
    for (int r = 0; r < 2; ++r) {
      std::vector<double> row;
      for (int j = 0; j < 300; ++j) {
        row.push_back(static_cast<double>(static_cast<std::int64_t>(xv[r * 300 + j]) ^ 1));
      }
      want[r] = *std::max_element(row.begin(), row.end());
      want[2 + r] = *std::min_element(row.begin(), row.end());
    }
    EXPECT_EQ(compare(a, want, {0, 0}), "") << name_of(dtype);
  }
}

}  // namespace
}  // namespace tileops::testing::tl_test
