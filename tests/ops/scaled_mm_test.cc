// scaled_mm (vLLM's cutlass_scaled_mm) against a float64 reference computed from the float8
// codes decoded here from their bit fields: both kinds, every out dtype, the three scale forms
// (per tensor; per token × per channel in vLLM's [M, 1] / [1, N] / [N, 1] shapes; 128×128 blocks
// with K and N tails, b's as vLLM's transposed view), the streaming path (M <= 16) and the packed
// path (M > 16), vLLM's column-major b (weight.t()) as well as row-major and strided b, strided a
// and out, bias, every SIMD target (the bfloat16 packed path on AVX512-BF16 and the float32 one),
// NaN codes, and bad inputs.
#include "tileops/ops/scaled_mm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/simd_targets.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

constexpr DataType kE4M3 = DataType::kFloat8E4M3FN;
constexpr DataType kE5M2 = DataType::kFloat8E5M2;

// The float8 value of `bits`, from the formats' definitions (OCP FP8: e4m3fn has no infinities
// and one NaN pattern per sign; e5m2 is IEEE-like).
double decode(std::uint8_t bits, DataType kind) {
  const bool e4m3 = kind == kE4M3;
  const int mant_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, exp_max = e4m3 ? 15 : 31;
  const int e = (bits & 0x7F) >> mant_bits, mant = bits & ((1 << mant_bits) - 1);
  const double sign = (bits & 0x80) != 0 ? -1.0 : 1.0;
  if (e4m3 && e == exp_max && mant == (1 << mant_bits) - 1) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (!e4m3 && e == exp_max) {
    return mant != 0 ? std::numeric_limits<double>::quiet_NaN()
                     : sign * std::numeric_limits<double>::infinity();
  }
  const double frac = e == 0 ? mant / double(1 << mant_bits) : 1.0 + mant / double(1 << mant_bits);
  return sign * std::ldexp(frac, (e == 0 ? 1 : e) - bias);
}

// A matrix of random codes with |value| <= 16 (subnormals and zeros included), as a view of the
// given layout; `codes` keeps them row-major.
struct Codes {
  TensorStorage storage;
  Tensor view;
  std::vector<std::uint8_t> codes;
};

// rows × cols as a view: row-major (kContiguous), with gaps (kStrided), or `transposed`: the
// transpose of a contiguous [cols, rows] tensor (vLLM's b = weight.t()).
Codes random_codes(std::int64_t rows, std::int64_t cols, DataType kind, std::mt19937_64& rng,
                   Layout layout, bool transposed = false) {
  Codes c;
  if (transposed) {
    c.storage = testing::poisoned({cols, rows}, kind);
    c.view = c.storage.view().transpose(0, 1);
  } else {
    c.storage = testing::poisoned({rows, cols}, kind, layout);
    c.view = c.storage.view();
  }
  std::uniform_int_distribution<int> byte(0, 255);
  c.codes.resize(rows * cols);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      std::uint8_t b;
      do {
        b = static_cast<std::uint8_t>(byte(rng));
      } while (!(std::abs(decode(b, kind)) <= 16.0));
      c.codes[i * cols + j] = b;
      const std::int64_t index[] = {i, j};
      *static_cast<std::uint8_t*>(c.view.element_ptr(index)) = b;
    }
  }
  return c;
}

TensorStorage random_scales(const Dims& shape, std::mt19937_64& rng) {
  return testing::random_tensor(shape, DataType::kFloat32, rng, Layout::kContiguous, 0.01, 0.2);
}

enum class Scales { kTensor, kTokenChannel, kTokenTensor, kChannelAsColumn, kBlock };

struct Case {
  std::int64_t m, n, k;
  DataType kind, out_dtype;
  Scales scales;
  bool bias;
  Layout a_layout, out_layout;
  int b_form;  // 0: weight.t() (vLLM), 1: row-major [K, N], 2: strided
};

std::string describe(const Case& c) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " " + std::string(name_of(c.kind)) + " -> " + std::string(name_of(c.out_dtype)) +
         " scales " + std::to_string(int(c.scales)) + " bias " + std::to_string(c.bias) +
         " b form " + std::to_string(c.b_form) + " a " + testing::layout_name(c.a_layout) +
         " out " + testing::layout_name(c.out_layout);
}

void check(const Case& c, std::mt19937_64& rng, const Context& ctx = {}) {
  SCOPED_TRACE(describe(c));
  const std::int64_t m = c.m, n = c.n, k = c.k;
  const Codes a = random_codes(m, k, c.kind, rng, c.a_layout);
  const Codes b = random_codes(
      k, n, c.kind, rng, c.b_form == 2 ? Layout::kStrided : Layout::kContiguous, c.b_form == 0);
  const std::int64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
  Dims sa_shape{1}, sb_shape{1};
  switch (c.scales) {
    case Scales::kTensor:
      break;
    case Scales::kTokenChannel:
      sa_shape = Dims{m, 1}, sb_shape = Dims{1, n};
      break;
    case Scales::kTokenTensor:
      sa_shape = Dims{m};
      break;
    case Scales::kChannelAsColumn:  // vLLM's per-channel weight_scale parameter is [N, 1]
      sb_shape = Dims{n, 1};
      break;
    case Scales::kBlock:
      sa_shape = Dims{m, kb}, sb_shape = Dims{kb, nb};
      break;
  }
  const TensorStorage sa = random_scales(sa_shape, rng);
  // vLLM's block scales of b are the transpose of the weight's [N/128, K/128] (not contiguous).
  const bool sb_transposed = c.scales == Scales::kBlock && c.b_form == 0;
  const TensorStorage sb = random_scales(sb_transposed ? Dims{nb, kb} : sb_shape, rng);
  const Tensor sb_view = sb_transposed ? sb.view().transpose(0, 1) : sb.view();
  const std::vector<double> sap = testing::to_doubles(sa), sbp = testing::to_doubles(sb_view);
  TensorStorage bias;
  std::vector<double> bias_values(n, 0.0);
  if (c.bias) {
    bias = testing::random_tensor({n}, c.out_dtype, rng, Layout::kStrided);
    bias_values = testing::to_doubles(bias);
  }
  TensorStorage out = testing::poisoned({m, n}, c.out_dtype, c.out_layout);
  scaled_mm(a.view, b.view, sa, sb_view, c.bias ? bias.view() : Tensor(), out, ctx);

  const bool block = c.scales == Scales::kBlock;
  std::vector<double> expected(m * n);
  std::vector<double> bound(m * n);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        double term = decode(a.codes[i * k + p], c.kind) * decode(b.codes[p * n + j], c.kind);
        if (block) term *= sap[i * kb + p / 128] * sbp[(p / 128) * nb + j / 128];
        sum += term;
        magnitude += std::abs(term);
      }
      if (!block) {
        const double s = sap[sap.size() == 1 ? 0 : i] * sbp[sbp.size() == 1 ? 0 : j];
        sum *= s, magnitude *= s;
      }
      expected[i * n + j] = sum + bias_values[j];
      // float32 accumulation (and scaled operands) plus one rounding to out's dtype.
      const double rounding = c.out_dtype == DataType::kFloat32   ? 0x1p-23
                              : c.out_dtype == DataType::kFloat16 ? 0x1p-11
                                                                  : 0x1p-8;
      bound[i * n + j] =
          magnitude * (double(k + 4) * 0x1p-23) + std::abs(expected[i * n + j]) * rounding + 1e-30;
    }
  }
  const std::vector<double> actual = testing::to_doubles(out);
  int failures = 0;
  for (std::int64_t e = 0; e < m * n && failures < 5; ++e) {
    if (!(std::abs(actual[e] - expected[e]) <= bound[e])) {
      ADD_FAILURE() << "element " << e / n << "," << e % n << ": " << actual[e] << " expected "
                    << expected[e] << " ± " << bound[e];
      ++failures;
    }
  }
}

const DataType kOutDtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

TEST(ScaledMm, PerTensorTokenAndChannelScales) {
  testing::for_each_implementation("scaled_mm", [](const Context& ctx) {
    std::mt19937_64 rng(1);
    int variant = 0;
    for (DataType kind : {kE4M3, kE5M2}) {
      for (DataType out : kOutDtypes) {
        for (std::int64_t m : {1, 5, 17}) {
          for (Scales s : {Scales::kTensor, Scales::kTokenChannel, Scales::kTokenTensor,
                           Scales::kChannelAsColumn}) {
            ++variant;
            const Layout a_layout = variant % 3 == 0 ? Layout::kStrided : Layout::kContiguous;
            const Layout out_layout = variant % 4 == 1 ? Layout::kStrided : Layout::kContiguous;
            check({m, 33, 130, kind, out, s, variant % 2 == 0, a_layout, out_layout, variant % 3},
                  rng, ctx);
          }
        }
      }
    }
  });
}

TEST(ScaledMm, LongKRunsOverSeveralKBlocks) {
  testing::for_each_implementation("scaled_mm", [](const Context& ctx) {
    std::mt19937_64 rng(7);
    for (std::int64_t m : {2, 16, 20}) {
      check({m, 24, 2100, kE5M2, DataType::kFloat32, Scales::kTokenChannel, true,
             Layout::kContiguous, Layout::kContiguous, 0},
            rng, ctx);
    }
  });
}

TEST(ScaledMm, BlockScalesWithTails) {
  testing::for_each_implementation("scaled_mm", [](const Context& ctx) {
    std::mt19937_64 rng(2);
    int variant = 0;
    for (DataType kind : {kE4M3, kE5M2}) {
      for (DataType out : kOutDtypes) {
        for (std::int64_t m : {1, 6, 19}) {
          ++variant;
          // K and N off multiples of 128: the last block of each is shorter.
          check({m, 200, 300, kind, out, Scales::kBlock, variant % 2 == 1,
                 variant % 3 == 2 ? Layout::kStrided : Layout::kContiguous,
                 variant % 2 == 0 ? Layout::kStrided : Layout::kContiguous, variant % 3},
                rng, ctx);
        }
      }
    }
    // Whole blocks, vLLM's layouts, more than one K block of the packed path; the tl kernel's
    // row and column tiles (256 × 128) with tails.
    check({24, 256, 640, kE4M3, DataType::kBFloat16, Scales::kBlock, false, Layout::kContiguous,
           Layout::kContiguous, 0},
          rng, ctx);
    check({260, 140, 300, kE5M2, DataType::kFloat32, Scales::kBlock, true, Layout::kContiguous,
           Layout::kContiguous, 0},
          rng, ctx);
  });
}

TEST(ScaledMm, EveryTarget) {
  std::mt19937_64 rng(3);
  testing::for_each_simd_target([&] {
    check({3, 37, 150, kE4M3, DataType::kFloat32, Scales::kTokenChannel, true, Layout::kContiguous,
           Layout::kContiguous, 0},
          rng);
    check({18, 50, 140, kE5M2, DataType::kBFloat16, Scales::kBlock, false, Layout::kStrided,
           Layout::kContiguous, 0},
          rng);
    // Per token/channel with more rows: the bfloat16 path on AVX512-BF16, float32 otherwise.
    check({40, 70, 100, kE4M3, DataType::kFloat16, Scales::kTokenChannel, true, Layout::kContiguous,
           Layout::kStrided, 0},
          rng);
  });
}

TEST(ScaledMm, EmptyKGivesTheBias) {
  testing::for_each_implementation("scaled_mm", [](const Context& ctx) {
    std::mt19937_64 rng(4);
    check({3, 5, 0, kE4M3, DataType::kFloat32, Scales::kTokenChannel, true, Layout::kContiguous,
           Layout::kContiguous, 1},
          rng, ctx);
  });
}

// NaN codes (and e5m2's infinities) reach the outputs of their rows on both paths.
TEST(ScaledMm, NonFiniteCodesPropagate) {
  testing::for_each_implementation("scaled_mm", [](const Context& ctx) {
    for (std::int64_t m : {2, 3, 20}) {
      for (DataType kind : {kE4M3, kE5M2}) {
        // b row-major, and as vLLM's weight.t() (the decode paths that read codes in place).
        for (const bool transposed : {false, true}) {
          const std::uint8_t special = kind == kE4M3 ? 0x7F : 0x7C;  // NaN / +Inf
          TensorStorage a({m, 40}, kind);
          TensorStorage b_store(transposed ? Dims{3, 40} : Dims{40, 3}, kind);
          const Tensor b = transposed ? b_store.view().transpose(0, 1) : b_store.view();
          std::fill_n(static_cast<std::uint8_t*>(a.data()), m * 40, std::uint8_t{0x38});  // 1 / .5
          std::fill_n(static_cast<std::uint8_t*>(b_store.data()), 120, std::uint8_t{0x38});
          static_cast<std::uint8_t*>(a.data())[40 + 3] = special;  // row 1
          const std::int64_t at[] = {37, 2};                       // column 2, in the K tail
          *static_cast<std::uint8_t*>(b.element_ptr(at)) = special;
          TensorStorage sa({1}, DataType::kFloat32), sb({1}, DataType::kFloat32);
          *sa.view().data_as<float>() = 1.0f, *sb.view().data_as<float>() = 1.0f;
          TensorStorage out = testing::poisoned({m, 3}, DataType::kFloat32);
          scaled_mm(a, b, sa, sb, Tensor(), out, ctx);
          const std::vector<double> v = testing::to_doubles(out);
          const double one = decode(0x38, kind) * decode(0x38, kind) * 40;
          for (std::int64_t i = 0; i < m; ++i) {
            for (int j = 0; j < 3; ++j) {
              const double got = v[i * 3 + j];
              if (i == 1 || j == 2) {
                EXPECT_TRUE(kind == kE4M3 ? std::isnan(got) : got == HUGE_VAL)
                    << i << "," << j << ": " << got << " transposed " << transposed;
              } else {
                EXPECT_EQ(got, one) << i << "," << j << " transposed " << transposed;
              }
            }
          }
        }
      }
    }
  });
}

TEST(ScaledMm, ClassFormOnNewData) {
  std::mt19937_64 rng(5);
  const Codes a = random_codes(4, 64, kE4M3, rng, Layout::kContiguous);
  const Codes b = random_codes(64, 16, kE4M3, rng, Layout::kContiguous, true);
  const TensorStorage sa = random_scales({4, 1}, rng), sb = random_scales({16}, rng);
  TensorStorage out1 = testing::poisoned({4, 16}, DataType::kFloat32);
  TensorStorage out2 = testing::poisoned({4, 16}, DataType::kFloat32);
  const ScaledMm op(a.view, b.view, sa, sb, Tensor(), out1);
  op(a.view, b.view, sa, sb, Tensor(), out1);
  scaled_mm(a.view, b.view, sa, sb, Tensor(), out2);
  EXPECT_EQ(testing::to_doubles(out1), testing::to_doubles(out2));
}

TEST(ScaledMm, RejectsBadInputs) {
  std::mt19937_64 rng(6);
  const std::int64_t m = 4, n = 33, k = 130;
  const Codes a = random_codes(m, k, kE4M3, rng, Layout::kContiguous);
  const Codes b = random_codes(k, n, kE4M3, rng, Layout::kContiguous, true);
  const TensorStorage sa = random_scales({m, 1}, rng), sb = random_scales({1, n}, rng);
  const TensorStorage out = testing::poisoned({m, n}, DataType::kBFloat16);
  const auto run = [&](const Tensor& a_, const Tensor& b_, const Tensor& sa_, const Tensor& sb_,
                       const Tensor& bias_, const Tensor& out_) {
    return [=] { scaled_mm(a_, b_, sa_, sb_, bias_, out_); };
  };
  const TensorStorage a16 = testing::poisoned({m, k}, DataType::kFloat16);
  expect_rejected(run(a16, b.view, sa, sb, Tensor(), out), out, "a", ErrorKind::kInvalidType);
  const TensorStorage b52 = testing::poisoned({k, n}, kE5M2);
  expect_rejected(run(a.view, b52, sa, sb, Tensor(), out), out, "b", ErrorKind::kInvalidType,
                  {"float8_e4m3fn"});
  const Codes b_short = random_codes(k - 1, n, kE4M3, rng, Layout::kContiguous);
  expect_rejected(run(a.view, b_short.view, sa, sb, Tensor(), out), out, "b",
                  ErrorKind::kInvalidArgument, {"K = 130"});
  const TensorStorage sa16 = testing::poisoned({m, 1}, DataType::kFloat16);
  expect_rejected(run(a.view, b.view, sa16, sb, Tensor(), out), out, "scale_a",
                  ErrorKind::kInvalidType);
  const TensorStorage sa_bad = random_scales({m + 1}, rng);
  expect_rejected(run(a.view, b.view, sa_bad, sb, Tensor(), out), out, "scale_a",
                  ErrorKind::kInvalidArgument, {"[M, ceil(K/128)]"});
  const TensorStorage sa_block = random_scales({m, 2}, rng), sb_bad = random_scales({2, 2}, rng);
  expect_rejected(run(a.view, b.view, sa_block, sb_bad, Tensor(), out), out, "scale_b",
                  ErrorKind::kInvalidArgument, {"[ceil(K/128), ceil(N/128)]"});
  const TensorStorage sa_gaps =
      testing::random_tensor({m, 1}, DataType::kFloat32, rng, Layout::kStrided);
  expect_rejected(run(a.view, b.view, sa_gaps, sb, Tensor(), out), out, "scale_a",
                  ErrorKind::kInvalidArgument, {"contiguous"});
  const TensorStorage bias32 = testing::random_tensor({n}, DataType::kFloat32, rng);
  expect_rejected(run(a.view, b.view, sa, sb, bias32, out), out, "bias", ErrorKind::kInvalidType,
                  {"out's dtype"});
  const TensorStorage bias_short = testing::random_tensor({n - 1}, DataType::kBFloat16, rng);
  expect_rejected(run(a.view, b.view, sa, sb, bias_short, out), out, "bias");
  const TensorStorage out_bad = testing::poisoned({m, n + 1}, DataType::kBFloat16);
  expect_rejected(run(a.view, b.view, sa, sb, Tensor(), out_bad), out_bad, "out");
  const TensorStorage out_int = testing::poisoned({m, n}, DataType::kInt32);
  expect_rejected(run(a.view, b.view, sa, sb, Tensor(), out_int), out_int, "out",
                  ErrorKind::kInvalidType);
}

}  // namespace
}  // namespace tileops::ops
