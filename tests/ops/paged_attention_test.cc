// paged_attention (decode) against the float64 reference: lengths 0, 1, 17, 129 and 1000,
// block sizes 16 and 32, GQA ratios 1/4/8, every float dtype, split-KV over 4 threads, sliding
// windows, host mirrors, strided query/output/caches, index tensors of either width (int64
// beyond int32 refused), the class form and bad inputs; every case on every active CPU
// implementation (native, tl; tl on a diagonal of the native kernel's tiling cases).
#include "tileops/ops/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/ops/attention_cases.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops {
namespace {

using testing::AttentionCase;
using testing::AttentionInputs;
using testing::expect_rejected;
using testing::Layout;

// A decode case: one query per sequence against kv_lens keys in a paged cache.
AttentionCase decode_case(std::vector<std::int64_t> kv_lens, std::int64_t heads,
                          std::int64_t kv_heads, std::int64_t head_size, std::int64_t block_size,
                          DataType dtype = DataType::kFloat32) {
  AttentionCase c;
  c.dtype = dtype, c.heads = heads, c.kv_heads = kv_heads, c.head_size = head_size;
  c.kv_lens = std::move(kv_lens);
  c.q_lens.assign(c.kv_lens.size(), 1);
  c.block_size = block_size;
  return c;
}

// Which implementations a case runs on: all, or the native one alone (for cases of the native
// kernel's tiling, whose every tl specialisation would be another JIT compile of seconds).
enum class Implementations { kAll, kNative };

void run_decode(const AttentionCase& c, const Context& ctx = {}, bool mirrors = false,
                Implementations implementations = Implementations::kAll) {
  std::mt19937_64 rng(c.kv_lens.size() * 31 + c.head_size);
  AttentionInputs in(c, rng);
  const auto batch = static_cast<std::int64_t>(c.kv_lens.size());
  const TensorStorage lens = testing::int32_tensor(c.kv_lens, {batch});
  const std::vector<double> expected = in.expected(c);
  testing::for_each_implementation(
      "paged_attention",
      [&](const Context& with) {
        if (implementations == Implementations::kNative && with.implementation_index != 0) return;
        TensorStorage out = testing::poisoned({batch, c.heads, c.head_size}, c.dtype, c.layout);
        paged_attention(in.query, in.key_cache, in.value_cache, lens, in.block_table,
                        c.attributes(), out, mirrors ? lens.view() : Tensor(),
                        mirrors ? in.block_table.view() : Tensor(), with);
        EXPECT_EQ(
            testing::compare(out, expected, testing::attention_tolerance(c.dtype, c.head_size)),
            "");
      },
      ctx);
}

TEST(PagedAttention, LengthsBlockSizesGroupsDtypes) {
  int i = 0;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (std::int64_t bs : {16, 32}) {
      const std::int64_t g = std::vector<std::int64_t>{1, 4, 8}[i++ % 3];
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " block " << bs << " G=" << g);
      run_decode(decode_case({1, 17, 129, 0}, 2 * g, 2, 128, bs, dtype));
    }
  }
}

TEST(PagedAttention, HeadSizes) {
  for (std::int64_t d : {64, 80, 256}) {
    SCOPED_TRACE(d);
    run_decode(decode_case({33, 5}, 4, 1, d, 16));
  }
}

// bfloat16 rows are read in pairs of columns: groups of 1 and 2 take value tiles of 8 and 4
// vectors, which leave whole pair blocks (D = 80) and a single vector (D = 72) after them.
TEST(PagedAttention, BFloat16PairColumns) {
  for (std::int64_t g : {1, 2, 4}) {
    for (std::int64_t d : {72, 80, 128}) {
      SCOPED_TRACE(::testing::Message() << "G=" << g << " D=" << d);
      run_decode(decode_case({20, 3}, 2 * g, 2, d, 16, DataType::kBFloat16));
    }
  }
}

// The decode kernels tile query heads by four and value columns by up to eight vectors: groups
// of 3, 5, 6 and 7 leave every smaller head tile, and head sizes under one vector, between
// vectors and between column tiles leave scalar and single-vector tails. The tl implementation
// on the diagonal alone: each group and head size once.
TEST(PagedAttention, HeadTilesAndColumnTails) {
  const DataType dtypes[] = {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16};
  const std::int64_t groups[] = {3, 5, 6, 7}, head_sizes[] = {5, 36, 100, 200};
  int i = 0;
  for (int gi = 0; gi < 4; ++gi) {
    for (int di = 0; di < 4; ++di) {
      const DataType dtype = dtypes[i++ % 3];
      const std::int64_t g = groups[gi], d = head_sizes[di];
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " G=" << g << " D=" << d);
      run_decode(decode_case({1, 23, 70}, g, 1, d, 16, dtype), {}, false,
                 gi == di ? Implementations::kAll : Implementations::kNative);
    }
  }
}

TEST(PagedAttention, SplitKvOverThreads) {
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  run_decode(decode_case({1000}, 4, 1, 64, 32), ctx);
  run_decode(decode_case({1000, 300}, 8, 1, 128, 16, DataType::kBFloat16), ctx);
  AttentionCase c = decode_case({1000}, 2, 1, 64, 16);
  c.sliding_window = 300;
  run_decode(c, ctx);
}

TEST(PagedAttention, SlidingWindowAndMirrors) {
  AttentionCase c = decode_case({129, 40, 3}, 4, 2, 64, 16);
  c.window_left = 20;
  run_decode(c, {}, true);
  c.window_left = -1, c.sliding_window = 7, c.causal = true;
  run_decode(c, {}, true);
}

TEST(PagedAttention, StridedEverything) {
  AttentionCase c = decode_case({17, 129}, 8, 2, 80, 16, DataType::kFloat16);
  c.layout = Layout::kStrided;
  run_decode(c);
  c.dtype = DataType::kFloat32;
  run_decode(c);
  c.dtype = DataType::kBFloat16;
  run_decode(c);
}

TEST(PagedAttention, ClassFormOnNewData) {
  const AttentionCase c = decode_case({20, 9}, 4, 1, 64, 16);
  std::mt19937_64 rng(2);
  AttentionInputs first(c, rng), second(c, rng);
  const TensorStorage lens = testing::int32_tensor(c.kv_lens, {2});
  testing::for_each_implementation("paged_attention", [&](const Context& ctx) {
    TensorStorage out = testing::poisoned({2, 4, 64}, c.dtype);
    const PagedAttention op(first.query, first.key_cache, first.value_cache, lens,
                            first.block_table, c.attributes(), out, Tensor(), Tensor(),
                            ctx.implementation_index);
    op(second.query, second.key_cache, second.value_cache, lens, second.block_table, out, Tensor(),
       Tensor(), ctx);
    EXPECT_EQ(testing::compare(out, second.expected(c), testing::attention_tolerance(c.dtype, 64)),
              "");
  });
}

TEST(PagedAttention, BadInputs) {
  const AttentionCase c = decode_case({20, 9}, 4, 1, 64, 16);
  std::mt19937_64 rng(4);
  AttentionInputs in(c, rng);
  const TensorStorage lens = testing::int32_tensor(c.kv_lens, {2});
  TensorStorage out = testing::poisoned({2, 4, 64}, c.dtype);
  const auto attrs = c.attributes();
  const auto call = [&](const Tensor& seq_lens, const Tensor& table, const AttentionAttributes& a,
                        const Tensor& lens_host = {}) {
    return [&, a] {
      paged_attention(in.query, in.key_cache, in.value_cache, seq_lens, table, a, out, lens_host);
    };
  };
  const TensorStorage too_long = testing::int32_tensor({20, 33}, {2});
  expect_rejected(call(too_long, in.block_table, attrs), out, "seq_lens");
  expect_rejected(call(lens, in.block_table, attrs, too_long), out, "seq_lens_host");
  const TensorStorage bad_table = testing::int32_tensor({0, 1, -1, 7}, {2, 2});
  expect_rejected(call(lens, bad_table, attrs), out, "block_table");
  const TensorStorage lens16 = testing::poisoned({2}, DataType::kInt16);
  expect_rejected(call(lens16, in.block_table, attrs), out, "seq_lens", ErrorKind::kInvalidType);
  AttentionAttributes bad = attrs;
  bad.head_size = 32;
  expect_rejected(call(lens, in.block_table, bad), out, "head_size");
  bad = attrs, bad.sliding_window = 0;
  expect_rejected(call(lens, in.block_table, bad), out, "sliding_window");
  TensorStorage half_out = testing::poisoned({2, 4, 64}, DataType::kFloat16);
  expect_rejected(
      [&] {
        paged_attention(in.query, in.key_cache, in.value_cache, lens, in.block_table, attrs,
                        half_out);
      },
      half_out, "output", ErrorKind::kInvalidType);
}

// seq_lens, block_table and their host mirrors each int32 or int64 (every mix), contiguous or
// strided, split over threads: the results of the int32 call.
TEST(PagedAttention, IndexTensorsOfEitherWidth) {
  ThreadPool pool(3);
  Context ctx;
  ctx.thread_pool = &pool;
  const AttentionCase c = decode_case({300, 17, 0, 33}, 4, 2, 64, 16);
  std::mt19937_64 rng(5);
  AttentionInputs in(c, rng);
  const auto expected = in.expected(c);
  const TensorStorage lens32 = testing::int32_tensor(c.kv_lens, {4});
  const DataType widths[] = {DataType::kInt32, DataType::kInt64};
  for (DataType lens_width : widths) {
    for (DataType table_width : widths) {
      for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
        for (bool mirrors : {false, true}) {
          SCOPED_TRACE(std::string("seq_lens ") + std::string(name_of(lens_width)) +
                       " block_table " + std::string(name_of(table_width)) + " " +
                       testing::layout_name(layout) + (mirrors ? " with mirrors" : ""));
          const TensorStorage lens = testing::as_index(lens32, lens_width, layout);
          const TensorStorage table = testing::as_index(in.block_table, table_width, layout);
          // The mirrors take the other width, so that a mix is read as given.
          const DataType other_lens = lens_width == widths[0] ? widths[1] : widths[0];
          const TensorStorage lens_host = testing::as_index(lens32, other_lens, layout);
          const TensorStorage table_host =
              testing::as_index(in.block_table, table_width, Layout::kContiguous);
          testing::for_each_implementation(
              "paged_attention",
              [&](const Context& with) {
                TensorStorage out = testing::poisoned({4, 4, 64}, c.dtype);
                paged_attention(in.query, in.key_cache, in.value_cache, lens, table, c.attributes(),
                                out, mirrors ? lens_host.view() : Tensor(),
                                mirrors ? table_host.view() : Tensor(), with);
                EXPECT_EQ(
                    testing::compare(out, expected, testing::attention_tolerance(c.dtype, 64)), "");
              },
              ctx);
        }
      }
    }
  }
}

// An int64 length or block id beyond int32 is out of range, never read as its low 32 bits
// (valid here): refused naming the tensor (the mirror when it is what the kernel reads).
TEST(PagedAttention, Int64IndicesBeyondInt32AreRefused) {
  constexpr std::int64_t k2To32 = std::int64_t{1} << 32;
  const DataType i64 = DataType::kInt64;
  const AttentionCase c = decode_case({20, 9}, 4, 1, 64, 16);
  std::mt19937_64 rng(9);
  AttentionInputs in(c, rng);
  const TensorStorage lens = testing::int32_tensor(c.kv_lens, {2});
  TensorStorage out = testing::poisoned({2, 4, 64}, c.dtype);
  const auto attrs = c.attributes();
  const auto call = [&](const Tensor& seq_lens, const Tensor& table, const Tensor& lens_host = {},
                        const Tensor& table_host = {}) {
    return [&] {
      paged_attention(in.query, in.key_cache, in.value_cache, seq_lens, table, attrs, out,
                      lens_host, table_host);
    };
  };
  const TensorStorage far_lens = testing::index_tensor({20, k2To32 + 9}, {2}, i64);
  expect_rejected(call(far_lens, in.block_table), out, "seq_lens");
  expect_rejected(call(lens, in.block_table, far_lens), out, "seq_lens_host");
  const TensorStorage negative_lens = testing::index_tensor({20, 9 - k2To32}, {2}, i64);
  expect_rejected(call(negative_lens, in.block_table), out, "seq_lens");
  std::vector<std::int64_t> ids = testing::index_values(in.block_table);
  ids[2] += k2To32;  // [1, 0]: sequence 1's only block (table [2, 2])
  const Dims table_shape = in.block_table.view().shape();
  const TensorStorage far_table = testing::index_tensor(ids, table_shape, i64, Layout::kStrided);
  expect_rejected(call(lens, far_table), out, "block_table");
  expect_rejected(call(lens, in.block_table, {}, far_table), out, "block_table_host");
}

// Non-finite inputs propagate as in the float64 reference (issue #35): a NaN query element or
// an all-NaN key cache gave zeros. Lengths 0 (zeros whatever the cache holds), 17 and 1000
// (split over 4 threads: the merge carries NaN from any split, also from one that saw only NaN
// scores).
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(PagedAttention, NonFiniteInputsPropagate) {
  struct Poison {
    const char* name;
    void (*apply)(AttentionInputs&, std::int64_t row);  // row: elements per key (Hkv·D)
  };
  // Key tokens: 0..16 belong to the second sequence, 17..1016 to the third.
  const Poison poisons[] = {
      {"NaN query element", [](AttentionInputs& in, std::int64_t) { in.q[4 * 64 + 70] = kNaN; }},
      {"all-NaN keys", [](AttentionInputs& in, std::int64_t) { in.k.assign(in.k.size(), kNaN); }},
      {"NaN key element",
       [](AttentionInputs& in, std::int64_t row) { in.k[600 * row + 3] = kNaN; }},
      {"NaN keys of one split",
       [](AttentionInputs& in, std::int64_t row) {
         std::fill(in.k.begin() + 17 * row, in.k.begin() + 267 * row, kNaN);  // split 0 exactly
       }},
      {"+inf query element", [](AttentionInputs& in, std::int64_t) { in.q[9 * 64 + 1] = kInf; }},
      {"scores all -inf",  // -inf · 1 for every key of kv head 0
       [](AttentionInputs& in, std::int64_t row) {
         in.q[8 * 64 + 5] = -kInf;
         for (std::size_t t = 0; t < in.k.size() / row; ++t) in.k[t * row + 5] = 1.0;
       }},
      {"NaN and Inf values",
       [](AttentionInputs& in, std::int64_t row) {
         in.v[20 * row + 64 + 2] = kNaN, in.v[900 * row + 64 + 9] = kInf;
         in.v[3 * row + 4] = -kInf;
       }},
  };
  ThreadPool pool(4);
  Context ctx;
  ctx.thread_pool = &pool;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (const Poison& poison : poisons) {
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << ": " << poison.name);
      const AttentionCase c = decode_case({0, 17, 1000}, 4, 2, 64, 16, dtype);
      std::mt19937_64 rng(5);
      AttentionInputs in(c, rng);
      poison.apply(in, c.kv_heads * c.head_size);
      in.refresh();
      const std::vector<double> expected = in.expected(c);
      const auto nans =
          std::count_if(expected.begin(), expected.end(), [](double e) { return std::isnan(e); });
      EXPECT_GT(nans, 0);
      for (std::int64_t i = 0; i < 4 * 64; ++i) EXPECT_EQ(expected[i], 0.0);  // length 0
      const TensorStorage lens = testing::int32_tensor(c.kv_lens, {3});
      testing::for_each_implementation(
          "paged_attention",
          [&](const Context& with) {
            TensorStorage out = testing::poisoned({3, 4, 64}, dtype);
            paged_attention(in.query, in.key_cache, in.value_cache, lens, in.block_table,
                            c.attributes(), out, Tensor(), Tensor(), with);
            EXPECT_EQ(testing::compare(out, expected, testing::attention_tolerance(dtype, 64)), "");
          },
          ctx);
    }
  }
}

}  // namespace
}  // namespace tileops::ops
