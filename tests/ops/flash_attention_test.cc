// flash_attention against the float64 reference: varlen batches with lengths 1, 17, 129 and 1000,
// GQA ratios 1/4/8, head sizes 64/80/128/256, every float dtype, causal with q shorter than kv,
// both sliding-window forms, paged caches with block sizes 16 and 32 (equal to the packed
// results bit for bit on the native implementation, whose key tiles do not follow the blocks),
// strided query/output, poisoned outputs, the class form, the flash-attn adapters, index tensors
// of either width (int64 beyond int32 refused) and bad inputs; every case on every active CPU
// implementation (native, tl).
#include "tileops/ops/flash_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "tests/ops/attention_cases.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tests/support/scoped_env.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

using testing::attention_tolerance;
using testing::AttentionCase;
using testing::AttentionInputs;
using testing::expect_rejected;
using testing::Layout;

// Runs the case (packed and, when block_size > 0, paged) on every active implementation and
// checks it against the reference; returns the outputs, in the order of the implementations.
std::vector<TensorStorage> run_case(const AttentionCase& c, std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  AttentionInputs in(c, rng);
  const std::vector<double> expected = in.expected(c);
  std::vector<TensorStorage> outputs;
  testing::for_each_implementation("flash_attention", [&](const Context& ctx) {
    TensorStorage out = testing::poisoned(in.query.view().shape(), c.dtype, c.layout);
    if (c.block_size == 0) {
      flash_attention(in.query, in.key, in.value, in.cu_q, in.cu_kv, Tensor(), c.attributes(), out,
                      ctx);
    } else {
      flash_attention(in.query, in.key_cache, in.value_cache, in.cu_q, in.cu_kv, in.block_table,
                      c.attributes(), out, ctx);
    }
    EXPECT_EQ(testing::compare(out, expected, attention_tolerance(c.dtype, c.head_size)), "");
    outputs.push_back(std::move(out));
  });
  return outputs;
}

// The first rows of every output see no key: zeros.
void expect_leading_zeros(const std::vector<TensorStorage>& outputs, std::int64_t rows) {
  for (const TensorStorage& out : outputs) {
    for (double x : testing::to_doubles(out.view().slice(0, 0, rows))) EXPECT_EQ(x, 0.0);
  }
}

TEST(FlashAttention, VarlenCausalGqa) {
  for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
    AttentionCase c;
    c.heads = 8, c.kv_heads = 2, c.head_size = 64;
    c.q_lens = {1, 17, 129};
    c.kv_lens = c.q_lens;
    c.causal = true;
    c.layout = layout;
    SCOPED_TRACE(testing::layout_name(layout));
    run_case(c);
  }
}

TEST(FlashAttention, LongSequence) {
  AttentionCase c;
  c.heads = 2, c.kv_heads = 1, c.head_size = 64;
  c.q_lens = {1000};
  c.kv_lens = {1000};
  c.causal = true;
  run_case(c);
  c.causal = false;
  c.q_lens = {17}, c.kv_lens = {1000};  // chunked prefill against a long context
  run_case(c);
}

TEST(FlashAttention, DtypesHeadSizesAndGroups) {
  const std::int64_t sizes[] = {64, 80, 128, 256};
  const std::int64_t groups[] = {1, 4, 8};
  int i = 0;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (std::int64_t d : sizes) {
      const std::int64_t g = groups[i++ % 3];
      AttentionCase c;
      c.dtype = dtype, c.head_size = d, c.kv_heads = 1, c.heads = g;
      c.q_lens = {17, 5}, c.kv_lens = {40, 5};
      c.causal = true;
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " D=" << d << " G=" << g);
      run_case(c);
    }
  }
}

TEST(FlashAttention, CausalQueriesShorterAndLongerThanKeys) {
  AttentionCase c;
  c.heads = 4, c.kv_heads = 4;
  c.q_lens = {5, 30, 1}, c.kv_lens = {100, 30, 129};
  c.causal = true;
  run_case(c);
  // More queries than keys: the first rows see no key at all and get zeros.
  c.q_lens = {20}, c.kv_lens = {7};
  expect_leading_zeros(run_case(c), 13);
}

TEST(FlashAttention, SlidingWindows) {
  AttentionCase c;
  c.heads = 4, c.kv_heads = 2;
  c.q_lens = {129, 17}, c.kv_lens = {129, 200};
  c.causal = true, c.sliding_window = 33;  // vLLM's form
  run_case(c);
  c.sliding_window.reset(), c.window_left = 32, c.window_right = 0;  // flash-attn's form
  run_case(c);
  c.sliding_window = 33;  // both, agreeing
  run_case(c);
  c.sliding_window.reset(), c.causal = false, c.window_left = 10, c.window_right = 25;
  run_case(c);
  c.window_left = -1, c.window_right = 3;
  run_case(c);
}

TEST(FlashAttention, PagedEqualsPacked) {
  for (std::int64_t bs : {16, 32}) {
    for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
      AttentionCase c;
      c.dtype = dtype, c.heads = 8, c.kv_heads = 2, c.head_size = 80;
      c.q_lens = {1, 17, 40}, c.kv_lens = {33, 129, 40};
      c.causal = true;
      c.layout = bs == 32 ? Layout::kStrided : Layout::kContiguous;
      SCOPED_TRACE(::testing::Message() << "block " << bs << " " << name_of(dtype));
      c.block_size = bs;
      const std::vector<TensorStorage> paged = run_case(c, 7);
      c.block_size = 0;
      const std::vector<TensorStorage> packed = run_case(c, 7);
      EXPECT_EQ(testing::to_doubles(paged[0]), testing::to_doubles(packed[0]));
    }
  }
}

TEST(FlashAttention, Bfloat16OnEveryPath) {
  // bfloat16 with head sizes that are multiples of 16 runs on AMX tiles where the CPU has them
  // (TILEOPS_AMX=0: the vector path): varlen, GQA, strides, rows without keys, windows, paging.
  for (const char* amx : {"1", "0"}) {
    SCOPED_TRACE(std::string("TILEOPS_AMX=") + amx);
    const testing::ScopedEnv amx_env("TILEOPS_AMX", amx);
    AttentionCase c;
    c.dtype = DataType::kBFloat16, c.heads = 8, c.kv_heads = 2, c.head_size = 128;
    c.q_lens = {1, 17, 129}, c.kv_lens = {1, 17, 129};
    c.causal = true, c.layout = Layout::kStrided;
    run_case(c);
    c.scale = -0.07;  // applied before the causal mask, not folded into the softmax
    run_case(c);
    c.scale = 0;
    c.layout = Layout::kContiguous;
    c.q_lens = {20}, c.kv_lens = {7};  // the first 13 rows see no key
    expect_leading_zeros(run_case(c), 13);
    c.q_lens = {129, 17}, c.kv_lens = {129, 200};
    c.sliding_window = 33;
    run_case(c);
    c.sliding_window.reset(), c.causal = false, c.window_left = 10, c.window_right = 25;
    run_case(c);
    c.window_left = c.window_right = -1, c.causal = true, c.head_size = 64;
    c.q_lens = {1, 17, 40}, c.kv_lens = {33, 129, 40};
    for (std::int64_t bs : {16, 32}) {
      c.block_size = bs;
      const std::vector<TensorStorage> paged = run_case(c, 7);
      c.block_size = 0;
      const std::vector<TensorStorage> packed = run_case(c, 7);
      EXPECT_EQ(testing::to_doubles(paged[0]), testing::to_doubles(packed[0]));
    }
  }
}

TEST(FlashAttention, OneSequenceWithoutCumulativeLengths) {
  AttentionCase c;
  c.q_lens = {33}, c.kv_lens = {33};
  c.causal = true;
  std::mt19937_64 rng(3);
  AttentionInputs in(c, rng);
  testing::for_each_implementation("flash_attention", [&](const Context& ctx) {
    TensorStorage out = testing::poisoned({33, 4, 64}, c.dtype);
    flash_attention(in.query, in.key, in.value, Tensor(), Tensor(), Tensor(), c.attributes(), out,
                    ctx);
    EXPECT_EQ(testing::compare(out, in.expected(c), attention_tolerance(c.dtype, 64)), "");
  });
}

TEST(FlashAttention, ClassFormOnNewData) {
  AttentionCase c;
  c.q_lens = {9, 20}, c.kv_lens = {9, 20};
  c.causal = true;
  std::mt19937_64 rng(5);
  AttentionInputs first(c, rng), second(c, rng);
  testing::for_each_implementation("flash_attention", [&](const Context& ctx) {
    TensorStorage out = testing::poisoned({29, 4, 64}, c.dtype);
    const FlashAttention op(first.query, first.key, first.value, first.cu_q, first.cu_kv, Tensor(),
                            c.attributes(), out, ctx.implementation_index);
    op(second.query, second.key, second.value, second.cu_q, second.cu_kv, Tensor(), out, ctx);
    EXPECT_EQ(testing::compare(out, second.expected(c), attention_tolerance(c.dtype, 64)), "");
  });
}

TEST(FlashAttention, Adapters) {
  AttentionCase c;
  c.heads = 4, c.kv_heads = 2;
  c.q_lens = {3, 3}, c.kv_lens = {50, 20};
  c.causal = true, c.block_size = 16;
  std::mt19937_64 rng(11);
  AttentionInputs in(c, rng);
  const auto expected = in.expected(c);
  const auto tol = attention_tolerance(c.dtype, 64);
  testing::for_each_implementation("flash_attention", [&](const Context& ctx) {
    TensorStorage out = testing::poisoned({6, 4, 64}, c.dtype);
    mha_varlen_fwd(in.query, in.key_cache, in.value_cache, out, in.cu_q, in.cu_kv, in.block_table,
                   3, 50, 0.0, true, -1, -1, ctx);
    EXPECT_EQ(testing::compare(out, expected, tol), "");
    TensorStorage out4 = testing::poisoned({2, 3, 4, 64}, c.dtype);
    const Tensor q4 = in.query.view().with_shape({2, 3, 4, 64}, {3 * 256, 256, 64, 1});
    const TensorStorage lens = testing::int32_tensor({50, 20}, {2});
    mha_fwd_kvcache(q4, in.key_cache, in.value_cache, lens, in.block_table, out4, 0.0, true, -1, -1,
                    ctx);
    EXPECT_EQ(testing::compare(out4, expected, tol), "");
  });
}

// cu_seqlens_q, cu_seqlens_kv and block_table each int32 or int64 (every mix), contiguous or
// strided: the same results as the all-int32 call, packed and paged, and the adapters too.
TEST(FlashAttention, IndexTensorsOfEitherWidth) {
  const DataType widths[] = {DataType::kInt32, DataType::kInt64};
  for (std::int64_t block_size : {0, 16}) {
    AttentionCase c;
    c.heads = 4, c.kv_heads = 2;
    c.q_lens = {3, 17, 1}, c.kv_lens = {40, 17, 33};
    c.causal = true, c.block_size = block_size;
    std::mt19937_64 rng(21);
    AttentionInputs in(c, rng);
    const auto expected = in.expected(c);
    const auto tol = attention_tolerance(c.dtype, c.head_size);
    const Tensor& key = block_size ? in.key_cache.view() : in.key.view();
    const Tensor& value = block_size ? in.value_cache.view() : in.value.view();
    for (DataType q_width : widths) {
      for (DataType kv_width : widths) {
        for (DataType table_width : widths) {
          if (!block_size && table_width == DataType::kInt64) continue;  // no table
          for (Layout layout : {Layout::kContiguous, Layout::kStrided}) {
            SCOPED_TRACE("block_size " + std::to_string(block_size) + " cu_seqlens_q " +
                         std::string(name_of(q_width)) + " cu_seqlens_kv " +
                         std::string(name_of(kv_width)) + " block_table " +
                         std::string(name_of(table_width)) + " " + testing::layout_name(layout));
            const TensorStorage cu_q = testing::as_index(in.cu_q, q_width, layout);
            const TensorStorage cu_kv = testing::as_index(in.cu_kv, kv_width, layout);
            TensorStorage table;
            if (block_size) table = testing::as_index(in.block_table, table_width, layout);
            testing::for_each_implementation("flash_attention", [&](const Context& ctx) {
              TensorStorage out = testing::poisoned(in.query.view().shape(), c.dtype);
              flash_attention(in.query, key, value, cu_q, cu_kv,
                              block_size ? table.view() : Tensor(), c.attributes(), out, ctx);
              EXPECT_EQ(testing::compare(out, expected, tol), "");
              if (!block_size) return;
              TensorStorage varlen = testing::poisoned(in.query.view().shape(), c.dtype);
              mha_varlen_fwd(in.query, key, value, varlen, cu_q, cu_kv, table, 17, 40, 0.0, true,
                             -1, -1, ctx);
              EXPECT_EQ(testing::compare(varlen, expected, tol), "");
            });
          }
        }
      }
    }
  }
}

// An int64 index beyond int32 is out of range, never read as its low 32 bits (which would be a
// valid value here): refused naming the tensor, nothing written.
TEST(FlashAttention, Int64IndicesBeyondInt32AreRefused) {
  constexpr std::int64_t k2To32 = std::int64_t{1} << 32;
  const DataType i64 = DataType::kInt64;
  AttentionCase c;
  c.q_lens = {5, 7}, c.kv_lens = {5, 7};
  c.block_size = 16;
  std::mt19937_64 rng(17);
  AttentionInputs in(c, rng);
  TensorStorage out = testing::poisoned({12, 4, 64}, c.dtype);
  const auto attrs = c.attributes();
  const auto call = [&](const Tensor& k, const Tensor& v, const Tensor& cu_q, const Tensor& cu_kv,
                        const Tensor& table) {
    return [&] { flash_attention(in.query, k, v, cu_q, cu_kv, table, attrs, out); };
  };
  const Tensor packed_k = in.key.view(), packed_v = in.value.view();
  const Tensor paged_k = in.key_cache.view(), paged_v = in.value_cache.view();
  // cu_seqlens_q {0, 2^32 + 5, 12}: its low halves {0, 5, 12} are the valid in.cu_q.
  const TensorStorage far_q = testing::index_tensor({0, k2To32 + 5, 12}, {3}, i64);
  expect_rejected(call(packed_k, packed_v, far_q, in.cu_kv, Tensor()), out, "cu_seqlens_q");
  const TensorStorage far_kv = testing::index_tensor({0, 5, k2To32 + 12}, {3}, i64);
  expect_rejected(call(packed_k, packed_v, in.cu_q, far_kv, Tensor()), out, "cu_seqlens_kv");
  // Paged: a kv length of 2^32 + 7 (low half 7 fits the blocks), a block id of 2^32 + id.
  const TensorStorage long_kv = testing::index_tensor({0, 5, k2To32 + 12}, {3}, i64);
  expect_rejected(call(paged_k, paged_v, in.cu_q, long_kv, in.block_table), out, "cu_seqlens_kv");
  std::vector<std::int64_t> ids = testing::index_values(in.block_table);
  ids[1] += k2To32;
  const TensorStorage far_table =
      testing::index_tensor(ids, in.block_table.view().shape(), i64, Layout::kStrided);
  expect_rejected(call(paged_k, paged_v, in.cu_q, in.cu_kv, far_table), out, "block_table");
  const TensorStorage negative_table =
      testing::index_tensor({-k2To32 + ids[0], ids[1] - k2To32}, {2, 1}, i64);
  expect_rejected(call(paged_k, paged_v, in.cu_q, in.cu_kv, negative_table), out, "block_table");
  // The adapter's per-sequence lengths: 2^32 + 5 is refused, not 5.
  TensorStorage out4 = testing::poisoned({2, 6, 4, 64}, c.dtype);
  const Tensor q4 = in.query.view().with_shape({2, 6, 4, 64}, {6 * 256, 256, 64, 1});
  const TensorStorage far_lens = testing::index_tensor({k2To32 + 5, 7}, {2}, i64);
  expect_rejected(
      [&] {
        mha_fwd_kvcache(q4, paged_k, paged_v, far_lens, in.block_table, out4, 0.0, true, -1, -1);
      },
      out4, "cache_seqlens");
  // Other integer widths are still refused, as a type error.
  const TensorStorage cu16 = testing::poisoned({3}, DataType::kInt16);
  expect_rejected(call(packed_k, packed_v, cu16, in.cu_kv, Tensor()), out, "cu_seqlens_q",
                  ErrorKind::kInvalidType);
}

TEST(FlashAttention, BadInputs) {
  AttentionCase c;
  c.q_lens = {5, 7}, c.kv_lens = {5, 7};
  c.block_size = 16;
  std::mt19937_64 rng(13);
  AttentionInputs in(c, rng);
  TensorStorage out = testing::poisoned({12, 4, 64}, c.dtype);
  const auto attrs = c.attributes();
  const auto call = [&](const Tensor& q, const Tensor& k, const Tensor& cu_q, const Tensor& cu_kv,
                        const Tensor& table, const AttentionAttributes& a) {
    const Tensor& v = k.rank() == 4 ? in.value_cache.view() : in.value.view();
    return [&, a] { flash_attention(q, k, v, cu_q, cu_kv, table, a, out); };
  };
  // Packed keys with a half-precision dtype.
  TensorStorage k16 = testing::random_tensor({12, 1, 64}, DataType::kFloat16, rng);
  expect_rejected(call(in.query, k16, in.cu_q, in.cu_kv, Tensor(), attrs), out, "key",
                  ErrorKind::kInvalidType);
  AttentionAttributes bad = attrs;
  bad.num_heads = 3;
  expect_rejected(call(in.query, in.key, in.cu_q, in.cu_kv, Tensor(), bad), out, "num_heads");
  bad = attrs, bad.num_kv_heads = 3;
  expect_rejected(call(in.query, in.key, in.cu_q, in.cu_kv, Tensor(), bad), out, "num_kv_heads");
  bad = attrs, bad.sliding_window = 8, bad.window_left = 4, bad.window_right = 0;
  expect_rejected(call(in.query, in.key, in.cu_q, in.cu_kv, Tensor(), bad), out, "sliding_window");
  const TensorStorage short_cu = testing::int32_tensor({0, 5, 11}, {3});
  expect_rejected(call(in.query, in.key, short_cu, in.cu_kv, Tensor(), attrs), out, "cu_seqlens_q");
  const TensorStorage falling = testing::int32_tensor({0, 6, 5, 12}, {4});
  const TensorStorage cu3 = testing::int32_tensor({0, 4, 8, 12}, {4});
  expect_rejected(call(in.query, in.key, falling, cu3, Tensor(), attrs), out, "cu_seqlens_q");
  // Paged: a block id outside the cache, a sequence longer than its blocks.
  TensorStorage table = testing::int32_tensor({0, 99}, {2, 1});
  expect_rejected(call(in.query, in.key_cache, in.cu_q, in.cu_kv, table, attrs), out,
                  "block_table");
  const TensorStorage long_kv = testing::int32_tensor({0, 5, 40}, {3});
  expect_rejected(call(in.query, in.key_cache, in.cu_q, long_kv, in.block_table, attrs), out,
                  "cu_seqlens_kv");
  bad = attrs, bad.block_size = 32;
  expect_rejected(call(in.query, in.key_cache, in.cu_q, in.cu_kv, in.block_table, bad), out,
                  "block_size");
  // The output overlapping the query.
  expect_rejected(
      [&] {
        flash_attention(in.query, in.key, in.value, in.cu_q, in.cu_kv, Tensor(), attrs, in.query);
      },
      in.query, "output");
}

// Non-finite inputs propagate as in the float64 reference (issue #35): a NaN query element or
// an all-NaN key cache gave zeros. Sequences: one key; 200 keys over several key tiles and
// query tiles; 3 queries over 2 keys (causal: the first row sees no key and keeps its zeros).
namespace nonfinite {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Poison {
  const char* name;
  void (*apply)(AttentionInputs&, const AttentionCase&);
  bool gives_nan;
};

// Element (token t, head h, column c) of q ([T, H, D]) or of k/v ([T, Hkv, D]).
double& at(std::vector<double>& x, std::int64_t heads, std::int64_t d, std::int64_t t,
           std::int64_t h, std::int64_t c) {
  return x[static_cast<std::size_t>((t * heads + h) * d + c)];
}

const Poison kPoisons[] = {
    {"NaN query element",
     [](AttentionInputs& in, const AttentionCase& c) {
       at(in.q, c.heads, c.head_size, 12, 1, 3) = kNaN;
     },
     true},
    {"all-NaN keys",
     [](AttentionInputs& in, const AttentionCase&) { in.k.assign(in.k.size(), kNaN); }, true},
    {"NaN key element",
     [](AttentionInputs& in, const AttentionCase& c) {
       at(in.k, c.kv_heads, c.head_size, 1 + 150, 0, 5) = kNaN;
     },
     true},
    {"+inf query element",
     [](AttentionInputs& in, const AttentionCase& c) {
       at(in.q, c.heads, c.head_size, 30, 2, 0) = kInf;
     },
     true},
    {"scores all -inf",  // -inf · 1 for every key of the row's kv head
     [](AttentionInputs& in, const AttentionCase& c) {
       at(in.q, c.heads, c.head_size, 40, 0, 7) = -kInf;
       for (std::size_t t = 0; t < in.k.size() / (c.kv_heads * c.head_size); ++t) {
         at(in.k, c.kv_heads, c.head_size, static_cast<std::int64_t>(t), 0, 7) = 1.0;
       }
     },
     true},
    {"NaN and Inf values of a key every row sees",
     [](AttentionInputs& in, const AttentionCase& c) {
       at(in.v, c.kv_heads, c.head_size, 1, 1, 2) = kNaN;
       at(in.v, c.kv_heads, c.head_size, 1, 1, 9) = kInf;
       at(in.v, c.kv_heads, c.head_size, 1, 0, 4) = -kInf;
     },
     true},
    // Key 150 of the long sequence is visible from row 20 on, in a key tile that the earlier
    // rows see in part: their zero probabilities must not meet its NaN (0·NaN).
    {"NaN and Inf values of a key only later rows see",
     [](AttentionInputs& in, const AttentionCase& c) {
       at(in.v, c.kv_heads, c.head_size, 1 + 150, 0, 5) = kNaN;
       at(in.v, c.kv_heads, c.head_size, 1 + 150, 1, 6) = -kInf;
     },
     true},
    {"all-NaN values",
     [](AttentionInputs& in, const AttentionCase&) { in.v.assign(in.v.size(), kNaN); }, true},
};

std::int64_t nan_count(const std::vector<double>& x) {
  return std::count_if(x.begin(), x.end(), [](double e) { return std::isnan(e); });
}

void run_poisoned(AttentionCase c) {
  c.heads = 4, c.kv_heads = 2, c.causal = true;
  c.q_lens = {1, 70, 3}, c.kv_lens = {1, 200, 2};
  for (const Poison& poison : kPoisons) {
    SCOPED_TRACE(poison.name);
    std::mt19937_64 rng(11);
    AttentionInputs in(c, rng);
    poison.apply(in, c);
    in.refresh();
    const std::vector<double> expected = in.expected(c);
    if (poison.gives_nan) {
      EXPECT_GT(nan_count(expected), 0);
      EXPECT_LT(nan_count(expected), static_cast<std::int64_t>(expected.size()));
    }
    // The row without keys keeps its zeros whatever the keys hold.
    for (std::int64_t i = 0; i < c.heads * c.head_size; ++i) {
      EXPECT_EQ(expected[static_cast<std::size_t>(71 * c.heads * c.head_size + i)], 0.0);
    }
    testing::for_each_implementation("flash_attention", [&](const Context& ctx) {
      TensorStorage out = testing::poisoned(in.query.view().shape(), c.dtype, c.layout);
      if (c.block_size == 0) {
        flash_attention(in.query, in.key, in.value, in.cu_q, in.cu_kv, Tensor(), c.attributes(),
                        out, ctx);
      } else {
        flash_attention(in.query, in.key_cache, in.value_cache, in.cu_q, in.cu_kv, in.block_table,
                        c.attributes(), out, ctx);
      }
      EXPECT_EQ(testing::compare(out, expected, attention_tolerance(c.dtype, c.head_size)), "");
    });
  }
}

}  // namespace nonfinite

TEST(FlashAttention, NonFiniteInputsPropagate) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16}) {
    for (std::int64_t bs : {0, 16}) {
      SCOPED_TRACE(::testing::Message() << name_of(dtype) << " block " << bs);
      AttentionCase c;
      c.dtype = dtype, c.head_size = 64, c.block_size = bs;
      c.layout = bs == 0 ? Layout::kStrided : Layout::kContiguous;
      nonfinite::run_poisoned(c);
    }
  }
  // bfloat16: AMX or AVX512-BF16 block products (head sizes of 16-column strips) where the CPU
  // has them, else and with TILEOPS_AMX=0 (and D = 72) the vector path.
  for (const char* amx : {"1", "0"}) {
    const testing::ScopedEnv amx_env("TILEOPS_AMX", amx);
    for (std::int64_t d : {64, 72}) {
      SCOPED_TRACE(::testing::Message() << "bfloat16 TILEOPS_AMX=" << amx << " D=" << d);
      AttentionCase c;
      c.dtype = DataType::kBFloat16, c.head_size = d;
      nonfinite::run_poisoned(c);
      c.scale = -0.07;  // applied before the mask
      nonfinite::run_poisoned(c);
    }
  }
}

}  // namespace
}  // namespace tileops::ops
