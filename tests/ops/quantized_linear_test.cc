// quantize_weight + linear_quantized. The quantized buffer is decoded here from the documented
// layout (docs/quantized-weights.md) and its scales and codes compared exactly with an
// independent float64 quantizer; linear_quantized is compared with a float64 linear over those
// dequantized weights. Every format (int8 per channel and per group, int4 symmetric and with zero
// points, groups 32/64/128), every dtype, M = 1 (the in-register path), M <= 16 (the panel
// path) and M > 16 (the GEMM path: K blocks, weight panels, row blocks), N off multiples of the
// 4-row tile, per-channel K off multiples of 32, strided and 3-D inputs, bias or none, every SIMD
// target, the class form and bad inputs.
#include "tileops/ops/quantized_linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/scoped_env.h"
#include "tests/support/simd_targets.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/cast.h"

namespace tileops::ops {
namespace {

using testing::expect_rejected;
using testing::Layout;

struct Format {
  int bits;
  int group_size;
  bool symmetric;
};

std::string name_of(const Format& f) {
  return "int" + std::to_string(f.bits) + " group " + std::to_string(f.group_size) +
         (f.symmetric ? " symmetric" : " zero points");
}

const Format kFormats[] = {{8, 0, true},  {8, 32, true},  {8, 128, true}, {4, 32, true},
                           {4, 64, true}, {4, 128, true}, {4, 32, false}, {4, 128, false}};

// The reference: per row and group, the float32 scale, the zero point and the signed value
// q − z each weight dequantizes from (w' = scale · (q − z)), from the float64 weights.
struct Quantized {
  std::int64_t n, k, group;
  int bits;
  std::vector<float> scale, zero;   // [n][groups]
  std::vector<int> code;            // [n][k]: the stored code (int8: signed; int4: 0..15)
  std::vector<double> dequantized;  // [n][k]
};

Quantized reference_quantize(const std::vector<double>& w, std::int64_t n, std::int64_t k,
                             const Format& f) {
  Quantized r{n, k, f.group_size == 0 ? k : f.group_size, f.bits, {}, {}, {}, {}};
  const std::int64_t groups = k / r.group;
  r.code.resize(n * k);
  r.dequantized.resize(n * k);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const double* wg = w.data() + i * k + g * r.group;
      double amax = 0, lo = 0, hi = 0;
      for (std::int64_t j = 0; j < r.group; ++j) {
        amax = std::max(amax, std::abs(wg[j]));
        lo = std::min(lo, wg[j]);
        hi = std::max(hi, wg[j]);
      }
      float s;
      double z = 0, qmin, qmax;
      if (f.symmetric) {
        s = static_cast<float>(amax / (f.bits == 8 ? 127.0 : 7.0));
        qmin = f.bits == 8 ? -127 : -8;
        qmax = f.bits == 8 ? 127 : 7;
      } else {
        s = static_cast<float>((hi - lo) / 15.0);
        z = s == 0 ? 0 : std::min(15.0, std::max(0.0, std::round(-lo / s)));
        qmin = 0, qmax = 15;
      }
      r.scale.push_back(s);
      r.zero.push_back(static_cast<float>(f.symmetric && f.bits == 4 ? 8 : z));
      for (std::int64_t j = 0; j < r.group; ++j) {
        const double q = s == 0 ? 0 : std::round(wg[j] / s);
        const int v = static_cast<int>(std::min(qmax, std::max(qmin, q + z)));  // value + z
        const std::int64_t at = i * k + g * r.group + j;
        r.code[at] = f.bits == 4 && f.symmetric ? v + 8 : v;
        r.dequantized[at] = double{s} * (v - z);
      }
    }
  }
  return r;
}

template <class T>
T read_at(const std::uint8_t* p, std::int64_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof(T));
  return v;
}

// Decodes the buffer as the docs lay it out and expects exactly the reference's numbers.
void expect_layout(const TensorStorage& q, const Quantized& ref, const Format& f) {
  const auto* p = static_cast<const std::uint8_t*>(q.data());
  const std::int64_t bytes = q.view().numel();
  ASSERT_EQ(read_at<std::uint32_t>(p, 0), 0x57514f54u);
  EXPECT_EQ(read_at<std::uint16_t>(p, 4), 2);
  EXPECT_EQ(p[6], f.bits);
  EXPECT_EQ(p[7], f.symmetric ? 1 : 0);
  EXPECT_EQ(read_at<std::int32_t>(p, 8), f.group_size);
  EXPECT_EQ(read_at<std::int64_t>(p, 16), ref.n);
  EXPECT_EQ(read_at<std::int64_t>(p, 24), ref.k);
  EXPECT_EQ(read_at<std::int64_t>(p, 32), bytes);
  const std::int64_t k_padded = f.group_size == 0 ? (ref.k + 63) / 64 * 64 : ref.k;
  const std::int64_t group = f.group_size == 0 ? k_padded : f.group_size;
  const std::int64_t groups = k_padded / group, tiles = (ref.n + 3) / 4;
  const std::int64_t meta = f.symmetric ? 16 : 32, row_bytes = group * f.bits / 8;
  const std::int64_t block = meta + 4 * row_bytes;
  // The rows' codes in interleaved runs of up to 64 bytes: byte j of row r.
  const std::int64_t run = std::min<std::int64_t>(64, row_bytes);
  const auto code_at = [&](std::int64_t r, std::int64_t j) {
    return j / run * 4 * run + r * run + j % run;
  };
  ASSERT_EQ(bytes, 64 + tiles * groups * block);
  int mismatches = 0;
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t b = 64 + (t * groups + g) * block;
      for (std::int64_t r = 0; r < 4; ++r) {
        const std::int64_t i = t * 4 + r;
        const float s = read_at<float>(p, b + r * 4);
        const float z =
            f.symmetric ? (f.bits == 4 ? 8.0f : 0.0f) : read_at<float>(p, b + 16 + r * 4);
        for (std::int64_t j = 0; j < group; ++j) {
          const std::int64_t col = g * group + j;
          int code;
          if (f.bits == 8) {
            code = static_cast<std::int8_t>(p[b + meta + code_at(r, j)]);
          } else {
            const std::uint8_t byte = p[b + meta + code_at(r, j % (group / 2))];
            code = j < group / 2 ? byte & 15 : byte >> 4;
          }
          const bool live = i < ref.n && col < ref.k;
          const int want_code =
              live ? ref.code[i * ref.k + col] : (f.bits == 4 && f.symmetric ? 8 : 0);
          const float want_s = i < ref.n ? ref.scale[i * (ref.k / ref.group) + g] : 0.0f;
          const float want_z = i < ref.n ? ref.zero[i * (ref.k / ref.group) + g]
                                         : (f.bits == 4 && f.symmetric ? 8.0f : 0.0f);
          if ((code != want_code || s != want_s || z != want_z) && mismatches++ < 5) {
            ADD_FAILURE() << "row " << i << " col " << col << ": code " << code << " scale " << s
                          << " zero " << z << ", expected " << want_code << " " << want_s << " "
                          << want_z;
          }
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TensorStorage quantized_of(const Tensor& weight, const Format& f) {
  auto q = testing::poisoned(
      {quantized_weight_bytes(weight.size(0), weight.size(1), f.bits, f.group_size, f.symmetric)},
      DataType::kUInt8);
  quantize_weight(weight, f.bits, f.group_size, f.symmetric, q.view());
  return q;
}

// The largest |x| of each element's block of x as one bfloat16 row takes it in 16-bit fixed point
// (256 elements per channel, else a group; docs/quantized-weights.md).
std::vector<double> fixed_point_block_max(const std::vector<double>& x, std::int64_t k,
                                          const Quantized& ref) {
  const std::int64_t block = ref.group == ref.k ? 256 : ref.group;
  std::vector<double> out(x.size());
  for (std::int64_t b0 = 0; b0 < k; b0 += block) {
    double largest = 0;
    for (std::int64_t p = b0; p < std::min(k, b0 + block); ++p) {
      largest = std::max(largest, std::abs(x[p]));
    }
    std::fill(out.begin() + b0, out.begin() + std::min(k, b0 + block), largest);
  }
  return out;
}

// |out − expected| within the output's rounding plus float32 accumulation over the magnitudes
// the kernel sums (Σ|x|·|s|·(|q| + |z|): int4's zero point is taken off as s·z·Σx), plus for
// bfloat16 the weights' rounding to bfloat16 (2^-9 relative; more than one row on CPUs with
// VDPBF16PS), and at one bfloat16 row x's fixed-point rounding (at most 2^-15 of its block's
// largest |x| per element).
void expect_linear(const Tensor& out, const std::vector<double>& x, const Quantized& ref,
                   const std::vector<double>& bias, std::int64_t m) {
  const std::vector<double> actual = testing::to_doubles(out);
  const testing::Tolerance tol = testing::tolerance_for(out.dtype());
  const std::int64_t groups = ref.k / ref.group;
  // int4 in groups of 32 on VDPBF16PS runs its own kernel, exact in x.
  const bool fixed_point = m == 1 && out.dtype() == DataType::kBFloat16 &&
                           !(ref.bits == 4 && ref.group == 32 && ops::cpu::dpbf16_enabled());
  const std::vector<double> block_max =
      fixed_point ? fixed_point_block_max(x, ref.k, ref) : std::vector<double>(ref.k, 0.0);
  int bad = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < ref.n; ++j) {
      double e = bias.empty() ? 0.0 : bias[j], mag = std::abs(e), products = 0.0, fixed_x = 0.0;
      for (std::int64_t p = 0; p < ref.k; ++p) {
        const double xv = x[i * ref.k + p];
        e += xv * ref.dequantized[j * ref.k + p];
        products += std::abs(xv * ref.dequantized[j * ref.k + p]);
        fixed_x += 0x1p-15 * block_max[p] * std::abs(ref.dequantized[j * ref.k + p]);
        const std::int64_t g = j * groups + p / ref.group;
        mag += std::abs(xv) * ref.scale[g] *
               (std::abs(ref.code[j * ref.k + p]) + std::abs(ref.zero[g]));
      }
      const double a = actual[i * ref.n + j];
      const double rounded_weights = out.dtype() == DataType::kBFloat16 ? 0x1p-9 * products : 0.0;
      const double limit =
          tol.atol + tol.rtol * std::abs(e) + 1e-5 * mag + rounded_weights + fixed_x;
      if (!(std::abs(a - e) <= limit) && bad++ < 5) {
        ADD_FAILURE() << "out[" << i << ", " << j << "] = " << a << ", expected " << e;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

class QuantizedLinearTest : public ::testing::TestWithParam<DataType> {
 protected:
  void check(const Dims& input_shape, std::int64_t n, const Format& f, bool with_bias,
             Layout layout) {
    const DataType dtype = GetParam();
    const std::int64_t k = input_shape.back();
    SCOPED_TRACE(::testing::Message()
                 << name_of(f) << " input " << input_shape.to_string() << " N=" << n
                 << " bias=" << with_bias << " " << testing::layout_name(layout));
    std::mt19937_64 rng(static_cast<std::uint64_t>(input_shape.product() * 7 + n + f.bits));
    auto input = testing::random_tensor(input_shape, dtype, rng, layout);
    // Weights with one outlier column, so that groups have different scales; zero points see
    // ranges that do not straddle 0 symmetrically.
    auto weight = testing::random_tensor({n, k}, dtype, rng, layout, -0.5, 1.5);
    auto bias = testing::random_tensor({n}, dtype, rng, layout);
    Dims out_shape = input_shape;
    out_shape[out_shape.size() - 1] = n;
    auto out = testing::poisoned(out_shape, dtype, layout);
    const auto q = quantized_of(weight.view(), f);
    const Quantized ref = reference_quantize(testing::to_doubles(weight.view()), n, k, f);
    expect_layout(q, ref, f);
    linear_quantized(input, q.view(), with_bias ? bias.view() : Tensor(), out);
    expect_linear(out.view(), testing::to_doubles(input.view()), ref,
                  with_bias ? testing::to_doubles(bias.view()) : std::vector<double>{},
                  input.view().numel() / k);
  }
};

TEST_P(QuantizedLinearTest, DecodeRow) {
  for (const Format& f : kFormats) {
    const std::int64_t k = f.group_size == 0 ? 131 : 256;  // per channel: K padded to 192
    check({1, k}, 37, f, true, Layout::kContiguous);
    check({1, k}, 9, f, false, Layout::kStrided);
    check({k}, 1, f, true, Layout::kContiguous);  // a 1-D input is one row
    // An odd number of groups of 32 (kernels that take groups in pairs).
    if (f.group_size == 32) check({1, 224}, 13, f, true, Layout::kContiguous);
  }
}

// One bfloat16 row runs on x in 16-bit fixed point with a power-of-two scale per block (int8
// and int4 weights, the zero points' terms from the blocks' sums). Blocks with an outlier and with
// small values stay within 2^-15 of their own largest; x with an infinity, a NaN or blocks below
// 2^-100 takes the float32 kernel instead.
TEST(QuantizedLinear, OneBfloat16RowInFixedPoint) {
  for (const Format& f : {Format{8, 0, true}, Format{8, 32, true}, Format{8, 128, true},
                          Format{4, 32, true}, Format{4, 64, false}, Format{4, 128, true}}) {
    SCOPED_TRACE(name_of(f));
    const std::int64_t n = 37, k = f.group_size == 0 ? 1000 : 1024;  // per channel: 4 blocks
    std::mt19937_64 rng(29);
    auto weight = testing::random_tensor({n, k}, DataType::kBFloat16, rng);
    const auto q = quantized_of(weight.view(), f);
    const Quantized ref = reference_quantize(testing::to_doubles(weight.view()), n, k, f);
    auto input = testing::random_tensor({1, k}, DataType::kBFloat16, rng);
    std::vector<double> x = testing::to_doubles(input.view());
    x[300] = 448.0;                                            // an outlier in block 1
    for (std::int64_t p = 520; p < 600; ++p) x[p] *= 0x1p-12;  // small values in block 2
    testing::from_doubles(input.view(), x);
    x = testing::to_doubles(input.view());
    auto out = testing::poisoned({1, n}, DataType::kBFloat16);
    linear_quantized(input.view(), q.view(), Tensor(), out.view());
    expect_linear(out.view(), x, ref, {}, 1);

    // Non-finite x: every output is non-finite, as the float32 kernel makes it.
    for (const double bad :
         {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
      std::vector<double> y = x;
      y[17] = bad;
      testing::from_doubles(input.view(), y);
      linear_quantized(input.view(), q.view(), Tensor(), out.view());
      for (const double v : testing::to_doubles(out.view())) EXPECT_FALSE(std::isfinite(v)) << bad;
    }

    // x near 2^-115 (its reciprocal scale would pass float's range): within the output's rounding
    // of the float64 result, relatively.
    std::vector<double> tiny(k);
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    for (double& v : tiny) v = 0x1p-115 * unit(rng);
    testing::from_doubles(input.view(), tiny);
    tiny = testing::to_doubles(input.view());
    linear_quantized(input.view(), q.view(), Tensor(), out.view());
    const std::vector<double> got = testing::to_doubles(out.view());
    for (std::int64_t j = 0; j < n; ++j) {
      double e = 0, products = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        e += tiny[p] * ref.dequantized[j * k + p];
        products += std::abs(tiny[p] * ref.dequantized[j * k + p]);
      }
      EXPECT_LE(std::abs(got[j] - e), 0x1p-8 * std::abs(e) + 0x1p-9 * products) << "row " << j;
    }
  }
}

TEST_P(QuantizedLinearTest, ManyRows) {
  for (const Format& f : kFormats) {
    const std::int64_t k = f.group_size == 0 ? 70 : 128;
    for (const std::int64_t m : {2, 5, 16, 17, 40})
      check({m, k}, 29, f, m % 2 == 1, Layout::kContiguous);
    check({3, 5, k}, 30, f, true, Layout::kStrided);  // 3-D: rows through both leading dims
  }
}

// The many-row paths (more than 16 rows: the float32 GEMM, bfloat16 chunks on VDPBF16PS) in
// several K blocks (512 or 256; 256), weight-row panels and row blocks (256 rows; 128), each with
// a tail.
TEST_P(QuantizedLinearTest, PrefillBlocks) {
  for (const Format& f : kFormats) {
    const std::int64_t k = f.group_size == 0 ? 610 : 640;  // per channel: K padded to 640
    check({261, k}, 53, f, true, Layout::kContiguous);
    check({19, k}, 101, f, false, Layout::kStrided);
    check({65, f.group_size == 0 ? 2170 : 2176}, 70, f, true, Layout::kContiguous);
  }
}

TEST_P(QuantizedLinearTest, EveryTarget) {
  // On CPUs with AMX, bfloat16 x of more than 16 rows takes the tile path unless TILEOPS_AMX=0.
  for (const char* amx : {"1", "0"}) {
    SCOPED_TRACE(std::string("TILEOPS_AMX=") + amx);
    const testing::ScopedEnv amx_env("TILEOPS_AMX", amx);
    testing::for_each_simd_target([&] {
      for (const Format& f : kFormats) {
        const std::int64_t k = f.group_size == 0 ? 100 : 384;
        check({1, k}, 21, f, true, Layout::kStrided);
        check({6, k}, 14, f, false, Layout::kContiguous);
        check({18, k}, 53, f, true, Layout::kContiguous);
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, QuantizedLinearTest,
                         ::testing::Values(DataType::kFloat32, DataType::kFloat16,
                                           DataType::kBFloat16));

TEST(QuantizedLinear, TheBufferIsTheSameOnEveryTarget) {
  std::mt19937_64 rng(11);
  auto weight = testing::random_tensor({13, 256}, DataType::kBFloat16, rng);
  for (const Format& f : kFormats) {
    const auto first = testing::snapshot(quantized_of(weight.view(), f));
    testing::for_each_simd_target(
        [&] { EXPECT_EQ(testing::snapshot(quantized_of(weight.view(), f)), first) << name_of(f); });
  }
}

TEST(QuantizedLinear, SizeOfTheBuffer) {
  // 64 header + tiles · groups · (scales [+ zeros] + 4 rows of codes).
  EXPECT_EQ(quantized_weight_bytes(4096, 4096, 8, 0, true), 64 + 1024 * (16 + 4 * 4096));
  EXPECT_EQ(quantized_weight_bytes(5, 33, 8, 0, true), 64 + 2 * (16 + 4 * 64));
  EXPECT_EQ(quantized_weight_bytes(5, 65, 8, 0, true), 64 + 2 * (16 + 4 * 128));  // K_p: 64s
  EXPECT_EQ(quantized_weight_bytes(8, 256, 4, 32, true), 64 + 2 * 8 * (16 + 4 * 16));
  EXPECT_EQ(quantized_weight_bytes(8, 256, 4, 128, false), 64 + 2 * 2 * (32 + 4 * 64));
  EXPECT_THROW(quantized_weight_bytes(std::int64_t{1} << 62, 1 << 30, 8, 0, true), Error);
  EXPECT_THROW(quantized_weight_bytes(INT64_MAX, 32, 4, 32, true), Error);
  EXPECT_THROW(quantized_weight_bytes(4, INT64_MAX, 8, 0, true), Error);
  try {
    quantized_weight_bytes(std::int64_t{1} << 62, std::int64_t{1} << 40, 8, 0, true);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos) << e.what();
  }
}

TEST(QuantizedLinear, ClassFormOnNewData) {
  std::mt19937_64 rng(3);
  const DataType f16 = DataType::kFloat16;
  const Format f{4, 64, false};
  auto input = testing::random_tensor({2, 128}, f16, rng);
  auto weight = testing::random_tensor({24, 128}, f16, rng);
  auto out = testing::poisoned({2, 24}, f16);
  const LinearQuantized op(input, quantized_of(weight.view(), f).view(), Tensor(), out);
  for (int round = 0; round < 3; ++round) {
    auto x = testing::random_tensor({2, 128}, f16, rng);
    auto w = testing::random_tensor({24, 128}, f16, rng);
    auto y = testing::poisoned({2, 24}, f16);
    op(x, quantized_of(w.view(), f).view(), Tensor(), y);
    expect_linear(y.view(), testing::to_doubles(x.view()),
                  reference_quantize(testing::to_doubles(w.view()), 24, 128, f), {}, 2);
  }
}

// The reference's codes, scales and zero points as pack_quantized_codes takes them: codes
// [n, k] (int4: uint8 0..15; int8: int8), scales and zeros [n, groups] as transposed views of
// [groups, n] storage (a checkpoint's orientation), in `scale_dtype`.
struct CodeTensors {
  TensorStorage codes, scales, zeros;  // storage of scales and zeros: [groups, n]
  Tensor scales_view() const { return scales.view().transpose(0, 1); }
  Tensor zeros_view() const {
    return zeros.view().defined() ? zeros.view().transpose(0, 1) : Tensor();
  }
};

CodeTensors code_tensors(const Quantized& r, const Format& f, DataType scale_dtype) {
  const std::int64_t groups = r.k / r.group;
  CodeTensors c;
  c.codes = TensorStorage({r.n, r.k}, f.bits == 4 ? DataType::kUInt8 : DataType::kInt8);
  auto* codes = static_cast<std::uint8_t*>(c.codes.data());
  for (std::int64_t i = 0; i < r.n * r.k; ++i) codes[i] = static_cast<std::uint8_t>(r.code[i]);
  TensorStorage s({groups, r.n}, DataType::kFloat32), z({groups, r.n}, DataType::kFloat32);
  for (std::int64_t i = 0; i < r.n; ++i) {
    for (std::int64_t g = 0; g < groups; ++g) {
      s.view().data_as<float>()[g * r.n + i] = r.scale[i * groups + g];
      z.view().data_as<float>()[g * r.n + i] = r.zero[i * groups + g];
    }
  }
  c.scales = TensorStorage({groups, r.n}, scale_dtype);
  cast(s, c.scales);
  if (!f.symmetric) c.zeros = std::move(z);
  return c;
}

TensorStorage packed_of(const CodeTensors& c, const Format& f, std::int64_t n, std::int64_t k) {
  auto q = testing::poisoned({quantized_weight_bytes(n, k, f.bits, f.group_size, f.symmetric)},
                             DataType::kUInt8);
  pack_quantized_codes(c.codes, c.scales_view(), c.zeros_view(), f.bits, f.group_size, q.view());
  return q;
}

// quantize_weight's own codes and scales, packed again, give its buffer byte for byte (padding
// rows and per-channel padding columns included).
TEST(PackQuantizedCodes, RepacksQuantizeWeightsBufferExactly) {
  std::mt19937_64 rng(21);
  for (const Format& f : kFormats) {
    SCOPED_TRACE(name_of(f));
    const std::int64_t n = 13, k = f.group_size == 0 ? 100 : 256;
    auto weight = testing::random_tensor({n, k}, DataType::kFloat32, rng);
    const Quantized ref = reference_quantize(testing::to_doubles(weight.view()), n, k, f);
    const auto expected = quantized_of(weight.view(), f);
    EXPECT_EQ(testing::snapshot(packed_of(code_tensors(ref, f, DataType::kFloat32), f, n, k)),
              testing::snapshot(expected));
  }
}

// Codes as a checkpoint holds them, chosen by the test: zero_of(g) for group g (8 where the
// format is symmetric), code_of(i) for element i of the row-major [n, k] weight, scales random
// and float16-exact so that the reference needs no rounding.
template <typename ZeroOf, typename CodeOf>
Quantized checkpoint_codes(std::int64_t n, std::int64_t k, const Format& f, std::mt19937_64& rng,
                           ZeroOf zero_of, CodeOf code_of) {
  std::uniform_real_distribution<double> scale(0.001, 0.05);
  const std::int64_t groups = k / f.group_size;
  Quantized r{n, k, f.group_size, f.bits, {}, {}, {}, {}};
  for (std::int64_t g = 0; g < n * groups; ++g) {
    r.scale.push_back(static_cast<float>(std::ldexp(std::round(std::ldexp(scale(rng), 14)), -14)));
    r.zero.push_back(f.symmetric ? 8.0f : zero_of(g));
  }
  for (std::int64_t i = 0; i < n * k; ++i) {
    r.code.push_back(static_cast<int>(code_of(i)));
    const std::int64_t g = (i / k) * groups + (i % k) / f.group_size;
    r.dequantized.push_back(double{r.scale[g]} * (r.code.back() - r.zero[g]));
  }
  return r;
}

// Codes and zero points no quantize_weight would choose (GPTQ's v1 zero point 16, AWQ's any
// 0..15), float16 scales: linear_quantized computes with scale · (code − zero) exactly.
TEST(PackQuantizedCodes, CheckpointCodesRunThroughLinearQuantized) {
  std::mt19937_64 rng(22);
  std::uniform_int_distribution<int> code(0, 15), zero(0, 16);
  for (const Format& f : {Format{4, 32, false}, Format{4, 128, true}}) {
    SCOPED_TRACE(name_of(f));
    const std::int64_t n = 10, k = 256;
    const Quantized r = checkpoint_codes(
        n, k, f, rng, [&](std::int64_t) { return static_cast<float>(zero(rng)); },
        [&](std::int64_t) { return code(rng); });
    const auto q = packed_of(code_tensors(r, f, DataType::kFloat16), f, n, k);
    expect_layout(q, r, f);
    for (const std::int64_t m : {1, 5}) {
      auto x = testing::random_tensor({m, k}, DataType::kFloat32, rng, Layout::kStrided);
      auto out = testing::poisoned({m, n}, DataType::kFloat32);
      linear_quantized(x, q, Tensor(), out);
      expect_linear(out.view(), testing::to_doubles(x.view()), r, {}, m);
    }
  }
}

// The bfloat16 paths look each int4 code up in its row's table of s·(q − z) for the group
// (M > 1 on CPUs with VDPBF16PS): codes at both ends (0 and 15, every nibble position of a
// byte), zero points at and past both ends (0, 15, GPTQ v1's 16, fractional), each group's
// scale different, through one row, the panel rows and the many-row chunks, groups of 32 (their
// own loop, two rows per load) and of 64 and 128, N off the 4-row tile.
TEST(PackQuantizedCodes, ExtremeCodesAndZeroPointsOnTheBfloat16Paths) {
  std::mt19937_64 rng(24);
  std::uniform_int_distribution<int> pick(0, 3);
  const float zeros[] = {0.0f, 15.0f, 16.0f, 7.5f};
  for (const Format& f :
       {Format{4, 32, false}, Format{4, 32, true}, Format{4, 64, false}, Format{4, 128, true}}) {
    SCOPED_TRACE(name_of(f));
    const std::int64_t n = 10, k = 256;
    const Quantized r = checkpoint_codes(
        n, k, f, rng, [&](std::int64_t g) { return zeros[g % 4]; },
        [&](std::int64_t i) {
          const int choice = pick(rng);  // mostly the ends, some in between
          return choice == 0 ? 0 : choice == 1 ? 15 : choice == 2 ? i % 16 : 15 - i % 3;
        });
    const auto q = packed_of(code_tensors(r, f, DataType::kFloat16), f, n, k);
    expect_layout(q, r, f);
    for (const std::int64_t m : {1, 5, 40}) {
      SCOPED_TRACE(m);
      auto x = testing::random_tensor({m, k}, DataType::kBFloat16, rng, Layout::kStrided);
      auto out = testing::poisoned({m, n}, DataType::kBFloat16);
      linear_quantized(x, q, Tensor(), out);
      expect_linear(out.view(), testing::to_doubles(x.view()), r, {}, m);
    }
  }
}

TEST(PackQuantizedCodes, RejectsBadCodesScalesAndShapes) {
  const Format f{4, 32, false};
  std::mt19937_64 rng(23);
  auto weight = testing::random_tensor({6, 64}, DataType::kFloat32, rng);
  const Quantized ref = reference_quantize(testing::to_doubles(weight.view()), 6, 64, f);
  CodeTensors c = code_tensors(ref, f, DataType::kFloat32);
  auto q = testing::poisoned({quantized_weight_bytes(6, 64, 4, 32, false)}, DataType::kUInt8);
  const auto rejects = [&](const Tensor& codes, const Tensor& scales, const Tensor& zeros, int bits,
                           int group, const std::string& arg, const std::string& detail,
                           ErrorKind kind = ErrorKind::kInvalidArgument) {
    expect_rejected([&] { pack_quantized_codes(codes, scales, zeros, bits, group, q); }, q, arg,
                    kind, {"pack_quantized_codes", detail});
  };
  static_cast<std::uint8_t*>(c.codes.data())[70] = 16;
  rejects(c.codes, c.scales_view(), c.zeros_view(), 4, 32, "codes", "0..15");
  static_cast<std::uint8_t*>(c.codes.data())[70] = 15;
  static_cast<float*>(c.scales.data())[3] = std::numeric_limits<float>::quiet_NaN();
  rejects(c.codes, c.scales_view(), c.zeros_view(), 4, 32, "scales", "finite");
  static_cast<float*>(c.scales.data())[3] = 0.5f;
  static_cast<float*>(c.zeros.data())[5] = std::numeric_limits<float>::infinity();
  rejects(c.codes, c.scales_view(), c.zeros_view(), 4, 32, "zeros", "finite");
  static_cast<float*>(c.zeros.data())[5] = 3.0f;
  rejects(c.codes, c.scales.view(), c.zeros_view(), 4, 32, "scales", "[N, K / group_size]");
  rejects(c.codes, c.scales_view(), c.zeros.view(), 4, 32, "zeros", "[N, K / group_size]");
  rejects(c.codes, c.scales_view(), c.zeros_view(), 4, 48, "group_size", "32, 64 or 128");
  rejects(c.codes, c.scales_view(), Tensor(), 8, 32, "codes", "int8 for bits = 8",
          ErrorKind::kInvalidType);
  rejects(c.codes, c.scales_view(), Tensor(), 4, 32, "qweight", "quantized_weight_bytes");
  auto int8_codes = testing::poisoned({6, 64}, DataType::kInt8);
  rejects(int8_codes, c.scales_view(), c.zeros_view(), 8, 32, "zeros", "bits = 8");
}

TEST(QuantizedLinear, RejectsBadAttributesAndWeights) {
  std::mt19937_64 rng(1);
  const DataType f32 = DataType::kFloat32;
  auto weight = testing::random_tensor({5, 64}, f32, rng);
  auto q = testing::poisoned({quantized_weight_bytes(5, 64, 8, 0, true)}, DataType::kUInt8);
  const auto reject = [&](int bits, int group, bool sym, const std::string& arg,
                          const std::string& detail) {
    expect_rejected([&] { quantize_weight(weight, bits, group, sym, q); }, q, arg,
                    ErrorKind::kInvalidArgument, {"quantize_weight", detail});
  };
  reject(6, 0, true, "bits", "8 or 4");
  reject(8, 48, true, "group_size", "0 (per channel), 32, 64 or 128");
  reject(4, 0, true, "group_size", "32, 64 or 128");
  reject(8, 0, false, "symmetric", "int8 is symmetric");
  auto weight_k = testing::random_tensor({5, 80}, f32, rng);
  expect_rejected([&] { quantize_weight(weight_k, 4, 64, true, q); }, q, "weight",
                  ErrorKind::kInvalidArgument, {"multiple of group_size"});
  auto empty = testing::random_tensor({0, 64}, f32, rng);
  expect_rejected([&] { quantize_weight(empty, 8, 0, true, q); }, q, "weight");
  reject(4, 32, true, "qweight", "quantized_weight_bytes");  // the size of another format
  auto strided = testing::poisoned({q.view().numel()}, DataType::kUInt8, Layout::kStrided);
  expect_rejected([&] { quantize_weight(weight, 8, 0, true, strided); }, strided, "qweight",
                  ErrorKind::kInvalidArgument, {"contiguous"});
  auto bad = testing::random_tensor({5, 64}, f32, rng);
  static_cast<float*>(bad.data())[70] = std::numeric_limits<float>::quiet_NaN();
  expect_rejected([&] { quantize_weight(bad, 8, 0, true, q); }, q, "weight",
                  ErrorKind::kInvalidArgument, {"finite"});
  static_cast<float*>(bad.data())[70] = -std::numeric_limits<float>::infinity();
  auto q4 = testing::poisoned({quantized_weight_bytes(5, 64, 4, 32, false)}, DataType::kUInt8);
  expect_rejected([&] { quantize_weight(bad, 4, 32, false, q4); }, q4, "weight",
                  ErrorKind::kInvalidArgument, {"finite"});
}

TEST(QuantizedLinear, RejectsBadBuffersAndShapes) {
  std::mt19937_64 rng(2);
  const DataType f32 = DataType::kFloat32;
  auto input = testing::random_tensor({3, 64}, f32, rng);
  auto weight = testing::random_tensor({6, 64}, f32, rng);
  const auto q = quantized_of(weight.view(), {4, 32, true});
  auto out = testing::poisoned({3, 6}, f32);
  const auto linear_rejects = [&](const Tensor& x, const Tensor& qw, const Tensor& b,
                                  const TensorStorage& y, const std::string& arg,
                                  const std::string& detail) {
    expect_rejected([&] { linear_quantized(x, qw, b, y); }, y, arg, ErrorKind::kInvalidArgument,
                    {"linear_quantized", detail});
  };
  // A corrupt header: every field checked against the buffer.
  const auto corrupt = [&](std::int64_t offset, std::int64_t value, int width,
                           const std::string& detail) {
    auto copy = testing::poisoned({q.view().numel()}, DataType::kUInt8);
    std::memcpy(copy.data(), q.data(), static_cast<std::size_t>(q.view().numel()));
    std::memcpy(static_cast<char*>(copy.data()) + offset, &value, static_cast<std::size_t>(width));
    linear_rejects(input, copy, Tensor(), out, "qweight", detail);
  };
  corrupt(0, 0x12345678, 4, "TOQW");
  corrupt(4, 1, 2, "version 1");  // the layout before its rows' codes were interleaved
  corrupt(6, 5, 1, "bits");
  corrupt(8, 48, 4, "group_size");
  corrupt(16, 9, 8, "bytes");  // another N: another size
  corrupt(16, std::int64_t{1} << 61, 8, "overflows int64");
  corrupt(32, 12345, 8, "header says 12345");
  corrupt(40, 1, 8, "corrupt");
  auto short_buffer = testing::poisoned({32}, DataType::kUInt8);
  linear_rejects(input, short_buffer, Tensor(), out, "qweight", "64-byte header");
  auto truncated = testing::poisoned({q.view().numel() - 16}, DataType::kUInt8);
  std::memcpy(truncated.data(), q.data(), static_cast<std::size_t>(q.view().numel() - 16));
  linear_rejects(input, truncated, Tensor(), out, "qweight", "bytes");
  auto input_k = testing::random_tensor({3, 32}, f32, rng);
  linear_rejects(input_k, q, Tensor(), out, "input", "last dim K = 64");
  auto out_n = testing::poisoned({3, 7}, f32);
  linear_rejects(input, q, Tensor(), out_n, "out", "last dim N");
  auto bias_n = testing::random_tensor({5}, f32, rng);
  linear_rejects(input, q, bias_n, out, "bias", "[N]");
  auto out_f16 = testing::poisoned({3, 6}, DataType::kFloat16);
  expect_rejected([&] { linear_quantized(input, q, Tensor(), out_f16); }, out_f16, "out",
                  ErrorKind::kInvalidType, {"same as 'input'"});
  auto q_f32 = testing::poisoned({q.view().numel()}, f32);
  expect_rejected([&] { linear_quantized(input, q_f32, Tensor(), out); }, out, "qweight",
                  ErrorKind::kInvalidType, {"uint8"});
}

}  // namespace
}  // namespace tileops::ops
