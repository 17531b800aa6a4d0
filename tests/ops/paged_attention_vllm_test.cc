// paged_attention with vLLM's forms: its key cache [num_blocks, Hkv, D / x, block_size, x] and
// value cache [num_blocks, Hkv, D, block_size] read in place as 5-D / 4-D views in tileops' dim
// order (every float dtype, x = 16 bytes, GQA, tails, split over threads, strided pieces),
// ALiBi slopes and fp8 caches with scales against float64 references (windows, splits, GQA);
// bad inputs name the argument; every case on every active CPU implementation (native, tl).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tests/ops/attention_cases.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tileops/core/error.h"
#include "tileops/core/float8.h"
#include "tileops/ops/paged_attention.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::AttentionCase;
using testing::AttentionInputs;
using testing::expect_rejected;

AttentionCase decode_case(std::vector<std::int64_t> kv_lens, std::int64_t heads,
                          std::int64_t kv_heads, std::int64_t head_size, std::int64_t block_size,
                          DataType dtype) {
  AttentionCase c;
  c.dtype = dtype, c.heads = heads, c.kv_heads = kv_heads, c.head_size = head_size;
  c.kv_lens = std::move(kv_lens);
  c.q_lens.assign(c.kv_lens.size(), 1);
  c.block_size = block_size;
  return c;
}

// `cache` [num_blocks, block_size, Hkv, D] copied into storage laid out as vLLM's key cache
// [num_blocks, Hkv, D / x, block_size, x], seen as [num_blocks, block_size, Hkv, D / x, x].
// `gap` > 1 spaces the elements (a strided view of that layout).
// The values are divided by `divisor` on the way (an fp8 cache of `dtype` holding x / scale).
TensorStorage vllm_key_cache(const TensorStorage& cache, std::int64_t x, std::int64_t gap = 1,
                             DataType dtype = DataType::kFloat32, double divisor = 0) {
  const Dims& s = cache.view().shape();
  const std::int64_t blocks = s[0], bs = s[1], hkv = s[2], d = s[3];
  const std::int64_t piece = x * gap, row = bs * piece, head = (d / x) * row;
  TensorStorage out(Dims{blocks, bs, hkv, d / x, x}, Dims{hkv * head, piece, head, row, gap},
                    divisor != 0 ? dtype : cache.view().dtype());
  out.fill_bytes(0xFF);
  std::vector<double> values = testing::to_doubles(cache);
  for (double& v : values) v /= divisor != 0 ? divisor : 1.0;
  testing::from_doubles(out, values);
  return out;
}

// `cache` copied into vLLM's value layout [num_blocks, Hkv, D, block_size], seen as
// [num_blocks, block_size, Hkv, D].
TensorStorage vllm_value_cache(const TensorStorage& cache) {
  const Dims& s = cache.view().shape();
  const std::int64_t bs = s[1], hkv = s[2], d = s[3];
  TensorStorage out(s, Dims{hkv * d * bs, 1, d * bs, bs}, cache.view().dtype());
  out.fill_bytes(0xFF);
  testing::from_doubles(out, testing::to_doubles(cache));
  return out;
}

TEST(PagedAttentionVllm, KeyAndValueCachesInVllmLayout) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  int i = 0;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    const std::int64_t x = 16 / static_cast<std::int64_t>(size_of(dtype));
    for (std::int64_t d : {64, 72}) {
      for (std::int64_t gap : {1, 2}) {
        const std::int64_t g = std::vector<std::int64_t>{1, 4, 3}[i++ % 3];
        SCOPED_TRACE(::testing::Message()
                     << name_of(dtype) << " D=" << d << " G=" << g << " gap " << gap);
        const AttentionCase c = decode_case({1, 17, 600, 0}, 2 * g, 2, d, 16, dtype);
        std::mt19937_64 rng(static_cast<std::uint64_t>(d + g));
        const AttentionInputs in(c, rng);
        const TensorStorage kc = vllm_key_cache(in.key_cache, x, gap);
        const TensorStorage vc = vllm_value_cache(in.value_cache);
        const TensorStorage lens = testing::int32_tensor(c.kv_lens, {4});
        const std::vector<double> expected = in.expected(c);
        testing::for_each_implementation(
            "paged_attention",
            [&](const Context& with) {
              TensorStorage out = testing::poisoned({4, c.heads, d}, dtype);
              paged_attention(in.query, kc, vc, lens, in.block_table, c.attributes(), out, Tensor(),
                              Tensor(), with);
              EXPECT_EQ(testing::compare(out, expected, testing::attention_tolerance(dtype, d)),
                        "");
            },
            ctx);
      }
    }
  }
}

PagedAttentionOptions with_slopes(const Tensor& slopes) {
  PagedAttentionOptions options;
  options.alibi_slopes = slopes;
  return options;
}

// softmax(scale · q·k_j + slope_h · (j - (n - 1))) over the visible keys j of each sequence, in
// float64; a query that sees no key gives zeros.
std::vector<double> alibi_reference(const AttentionCase& c, const AttentionInputs& in,
                                    const std::vector<double>& slopes) {
  const std::int64_t h_count = c.heads, d = c.head_size, group = c.heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const std::int64_t left = c.sliding_window ? *c.sliding_window - 1 : c.window_left;
  std::vector<double> out(c.kv_lens.size() * h_count * d, 0.0);
  std::int64_t start = 0;
  for (std::size_t b = 0; b < c.kv_lens.size(); ++b) {
    const std::int64_t n = c.kv_lens[b];
    const std::int64_t lo = left < 0 ? 0 : std::max<std::int64_t>(0, n - 1 - left);
    for (std::int64_t h = 0; h < h_count; ++h) {
      const std::int64_t kvh = h / group;
      std::vector<double> p;
      double big = -std::numeric_limits<double>::infinity(), total = 0;
      for (std::int64_t j = lo; j < n; ++j) {
        double dot = 0;
        for (std::int64_t e = 0; e < d; ++e) {
          dot += in.q[(b * h_count + h) * d + e] * in.k[((start + j) * c.kv_heads + kvh) * d + e];
        }
        p.push_back(scale * dot + slopes[h] * static_cast<double>(j - (n - 1)));
        big = std::max(big, p.back());
      }
      for (double& s : p) total += s = std::exp(s - big);
      for (std::int64_t j = lo; j < n; ++j) {
        const double w = p[j - lo] / total;
        for (std::int64_t e = 0; e < d; ++e) {
          out[(b * h_count + h) * d + e] += w * in.v[((start + j) * c.kv_heads + kvh) * d + e];
        }
      }
    }
    start += n;
  }
  return out;
}

TEST(PagedAttentionVllm, AlibiSlopes) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  int i = 0;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (std::int64_t window : {-1, 40}) {
      const std::int64_t g = std::vector<std::int64_t>{1, 4, 3}[i++ % 3];
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " G=" << g << " window " << window);
      AttentionCase c = decode_case({1, 23, 700, 0}, 2 * g, 2, 64, 16, dtype);
      c.window_left = window;
      std::mt19937_64 rng(static_cast<std::uint64_t>(40 + i));
      const AttentionInputs in(c, rng);
      // Slopes as ALiBi's geometric sequence, strided (every other element), and one 0.
      std::vector<double> slopes(c.heads);
      for (std::int64_t h = 0; h < c.heads; ++h) slopes[h] = std::pow(2.0, -(h + 1.0));
      slopes[0] = 0.0;
      const TensorStorage slope_tensor =
          testing::poisoned({c.heads}, DataType::kFloat32, testing::Layout::kStrided);
      testing::from_doubles(slope_tensor, slopes);
      const TensorStorage lens = testing::int32_tensor(c.kv_lens, {4});
      const std::vector<double> expected = alibi_reference(c, in, slopes);
      const std::vector<double> plain = alibi_reference(c, in, std::vector<double>(c.heads, 0.0));
      testing::for_each_implementation(
          "paged_attention",
          [&](const Context& with) {
            TensorStorage out = testing::poisoned({4, c.heads, 64}, dtype);
            paged_attention(in.query, in.key_cache, in.value_cache, lens, in.block_table,
                            c.attributes(), out, with_slopes(slope_tensor), with);
            EXPECT_EQ(testing::compare(out, expected, testing::attention_tolerance(dtype, 64)), "");
            // The class form takes them too; without slopes the plain result.
            const PagedAttention op(in.query, in.key_cache, in.value_cache, lens, in.block_table,
                                    c.attributes(), out, with_slopes(slope_tensor),
                                    with.implementation_index);
            TensorStorage out2 = testing::poisoned({4, c.heads, 64}, dtype);
            op(in.query, in.key_cache, in.value_cache, lens, in.block_table, out2,
               with_slopes(slope_tensor), with);
            EXPECT_EQ(testing::to_doubles(out2), testing::to_doubles(out));
            paged_attention(in.query, in.key_cache, in.value_cache, lens, in.block_table,
                            c.attributes(), out, Tensor(), Tensor(), with);
            EXPECT_EQ(testing::compare(out, plain, testing::attention_tolerance(dtype, 64)), "");
          },
          ctx);
    }
  }
}

// An 8-bit float's value, decoded from its fields (bias 7, no infinities, S.1111.111 NaN for
// e4m3fn; bias 15, IEEE-like for e5m2).
double fp8_value(std::uint8_t bits, bool e4m3) {
  const int mantissa_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int e = (bits & 0x7f) >> mantissa_bits, m = bits & ((1 << mantissa_bits) - 1);
  const double sign = (bits & 0x80) != 0 ? -1.0 : 1.0;
  if (e4m3 && e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && e == 31) return m == 0 ? sign * INFINITY : std::numeric_limits<double>::quiet_NaN();
  const double fraction = static_cast<double>(m) / (1 << mantissa_bits);
  return sign * (e == 0 ? std::ldexp(fraction, 1 - bias) : std::ldexp(1.0 + fraction, e - bias));
}

// fp8 caches (vLLM's kv_cache_dtype "fp8"): keys and values stored as fp8(x / scale) and read as
// fp8 · scale. The reference attends over those values in float64; scales are powers of two so
// that the query's dtype holds them exactly.
TEST(PagedAttentionVllm, Fp8CachesWithScales) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  int i = 0;
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16}) {
    for (DataType fp8 : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2}) {
      const bool e4m3 = fp8 == DataType::kFloat8E4M3FN;
      const std::int64_t g = std::vector<std::int64_t>{1, 4, 3}[i++ % 3];
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " " << name_of(fp8) << " G=" << g);
      const AttentionCase c = decode_case({1, 19, 500, 0}, 2 * g, 2, 64, 16, dtype);
      std::mt19937_64 rng(static_cast<std::uint64_t>(60 + i));
      AttentionInputs in(c, rng);
      const double k_scale = 1.0 / 16, v_scale = 1.0 / 8;
      const auto round_trip = [&](std::vector<double>& values, double scale) {
        for (double& v : values) {
          const std::uint8_t q = e4m3 ? double_to_float8_e4m3fn(v / scale, Overflow::kSaturate)
                                      : double_to_float8_e5m2(v / scale, Overflow::kSaturate);
          v = fp8_value(q, e4m3) * scale;
        }
      };
      round_trip(in.k, k_scale);
      round_trip(in.v, v_scale);
      in.refresh();  // the caches of `dtype` now hold fp8 · scale exactly
      const TensorStorage kc = vllm_key_cache(in.key_cache, 16, 1, fp8, k_scale);
      TensorStorage vc = testing::poisoned(in.value_cache.view().shape(), fp8);
      std::vector<double> values = testing::to_doubles(in.value_cache);
      for (double& v : values) v /= v_scale;
      testing::from_doubles(vc, values);
      const TensorStorage scales = testing::poisoned({2}, DataType::kFloat32);
      testing::from_doubles(scales, {k_scale, v_scale});
      PagedAttentionOptions options;
      options.k_scale = Tensor(scales.data(), Dims{1}, DataType::kFloat32);
      options.v_scale = Tensor(static_cast<float*>(scales.data()) + 1, Dims{}, DataType::kFloat32);
      const TensorStorage lens = testing::int32_tensor(c.kv_lens, {4});
      const std::vector<double> expected = in.expected(c);
      testing::for_each_implementation(
          "paged_attention",
          [&](const Context& with) {
            TensorStorage out = testing::poisoned({4, c.heads, 64}, dtype);
            paged_attention(in.query, kc, vc, lens, in.block_table, c.attributes(), out, options,
                            with);
            EXPECT_EQ(testing::compare(out, expected, testing::attention_tolerance(dtype, 64)), "");
          },
          ctx);
    }
  }
}

TEST(PagedAttentionVllm, BadInputs) {
  const AttentionCase c = decode_case({20, 9}, 4, 2, 64, 16, DataType::kFloat32);
  std::mt19937_64 rng(7);
  const AttentionInputs in(c, rng);
  const TensorStorage lens = testing::int32_tensor(c.kv_lens, {2});
  TensorStorage out = testing::poisoned({2, 4, 64}, c.dtype);
  const auto call = [&](const Tensor& kc, const Tensor& vc, const Tensor& slopes = {}) {
    return [&, kc, vc, slopes] {
      paged_attention(in.query, kc, vc, lens, in.block_table, c.attributes(), out,
                      with_slopes(slopes));
    };
  };
  const TensorStorage kc = vllm_key_cache(in.key_cache, 4);
  // x that does not split D: [.., 16, 3] holds 48 of 64.
  const TensorStorage bad_split =
      testing::poisoned({kc.view().size(0), 16, 2, 16, 3}, DataType::kFloat32);
  expect_rejected(call(bad_split, in.value_cache), out, "key_cache", ErrorKind::kInvalidArgument,
                  {"head_size / x, x"});
  const TensorStorage six =
      testing::poisoned({kc.view().size(0), 16, 2, 16, 4, 1}, DataType::kFloat32);
  expect_rejected(call(in.key_cache, six), out, "value_cache");
  const TensorStorage three = testing::poisoned({kc.view().size(0), 16, 128}, DataType::kFloat32);
  expect_rejected(call(three, in.value_cache), out, "key_cache");
  const TensorStorage long_slopes = testing::poisoned({5}, DataType::kFloat32);
  expect_rejected(call(in.key_cache, in.value_cache, long_slopes), out, "alibi_slopes");
  const TensorStorage half_slopes = testing::poisoned({4}, DataType::kFloat16);
  expect_rejected(call(in.key_cache, in.value_cache, half_slopes), out, "alibi_slopes",
                  ErrorKind::kInvalidType);
  const TensorStorage matrix_slopes = testing::poisoned({4, 1}, DataType::kFloat32);
  expect_rejected(call(in.key_cache, in.value_cache, matrix_slopes), out, "alibi_slopes");
  // fp8: both caches one 8-bit format; int8 is none; a scale holds one element.
  const Dims& cache_shape = in.key_cache.view().shape();
  const TensorStorage fp8 = testing::poisoned(cache_shape, DataType::kFloat8E4M3FN);
  const TensorStorage e5m2 = testing::poisoned(cache_shape, DataType::kFloat8E5M2);
  const TensorStorage ints = testing::poisoned(cache_shape, DataType::kInt8);
  expect_rejected(call(fp8, in.value_cache), out, "value_cache", ErrorKind::kInvalidType);
  expect_rejected(call(fp8, e5m2), out, "value_cache", ErrorKind::kInvalidType);
  expect_rejected(call(ints, ints), out, "key_cache", ErrorKind::kInvalidType);
  const TensorStorage two = testing::poisoned({2}, DataType::kFloat32);
  PagedAttentionOptions bad_scale;
  bad_scale.k_scale = two;
  expect_rejected(
      [&] {
        paged_attention(in.query, fp8, fp8, lens, in.block_table, c.attributes(), out, bad_scale);
      },
      out, "k_scale");
}

}  // namespace
}  // namespace tileops::ops
