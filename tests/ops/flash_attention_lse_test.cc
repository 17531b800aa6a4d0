// flash_attention's optional softmax_lse (flash_attn_varlen_func's [num_heads, Tq] float32) on
// every CPU implementation, against the float64 log-sum-exp of the scaled, masked scores: varlen
// GQA with causal bottom-right masks, sliding windows, paged caches, rows that see no key (-inf),
// every float dtype, a strided lse, the class form; the output unchanged by asking for it; and
// bad lse tensors refused before anything is written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "tests/ops/attention_cases.h"
#include "tests/support/expect_rejected.h"
#include "tests/support/implementations.h"
#include "tileops/core/error.h"
#include "tileops/ops/flash_attention.h"

namespace tileops::ops {
namespace {

using testing::AttentionCase;
using testing::AttentionInputs;
using testing::Layout;

// float32 scores and sums: a few ulps of the sum's log, plus the bfloat16 path's coarser exp
// (3e-6 relative); 1% of a score scale error still fails.
constexpr testing::Tolerance kLseTolerance{2e-5, 2e-5};

std::vector<double> expected_lse(const AttentionCase& c, const AttentionInputs& in) {
  return testing::reference::attention_lse(in.q, in.k, testing::cumulative(c.q_lens),
                                           testing::cumulative(c.kv_lens), c.spec());
}

// The lse tensor [H, Tq]: contiguous, or a transposed view of a [Tq, H] buffer with padded rows.
struct LseBuffer {
  TensorStorage storage;
  Tensor view;
};
LseBuffer poisoned_lse(std::int64_t heads, std::int64_t tq, bool transposed) {
  if (!transposed) {
    LseBuffer b{testing::poisoned({heads, tq}, DataType::kFloat32), Tensor()};
    b.view = b.storage.view();
    return b;
  }
  LseBuffer b{testing::poisoned({tq, heads + 3}, DataType::kFloat32), Tensor()};
  b.view = b.storage.view().slice(1, 0, heads).transpose(0, 1);
  return b;
}

// Runs the case with softmax_lse on implementation `ctx` and checks both outputs.
void run_case(const AttentionCase& c, const Context& ctx, bool transposed = false,
              std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  AttentionInputs in(c, rng);
  const std::int64_t tq = in.query.view().size(0);
  TensorStorage out = testing::poisoned(in.query.view().shape(), c.dtype, c.layout);
  const LseBuffer lse = poisoned_lse(c.heads, tq, transposed);
  if (c.block_size == 0) {
    flash_attention(in.query, in.key, in.value, in.cu_q, in.cu_kv, Tensor(), c.attributes(), out,
                    lse.view, ctx);
  } else {
    flash_attention(in.query, in.key_cache, in.value_cache, in.cu_q, in.cu_kv, in.block_table,
                    c.attributes(), out, lse.view, ctx);
  }
  EXPECT_EQ(testing::compare(lse.view, expected_lse(c, in), kLseTolerance), "");
  EXPECT_EQ(
      testing::compare(out, in.expected(c), testing::attention_tolerance(c.dtype, c.head_size)),
      "");
}

TEST(FlashAttentionLse, VarlenGqaCausalBottomRight) {
  testing::for_each_implementation("flash_attention", [](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
      SCOPED_TRACE(std::string(name_of(dtype)));
      AttentionCase c;
      c.dtype = dtype, c.heads = 8, c.kv_heads = 2, c.head_size = 64;
      c.q_lens = {1, 17, 70}, c.kv_lens = {5, 17, 131};  // queries shorter than keys: bottom-right
      c.causal = true;
      run_case(c, ctx, dtype == DataType::kFloat16);
    }
  });
}

TEST(FlashAttentionLse, RowsWithoutKeysAreMinusInfinity) {
  testing::for_each_implementation("flash_attention", [](const Context& ctx) {
    AttentionCase c;
    c.heads = 4, c.kv_heads = 4, c.head_size = 80;  // a head size that is no whole strip
    c.q_lens = {20, 3}, c.kv_lens = {7, 0};         // 13 rows before the diagonal, no keys at all
    c.causal = true;
    std::mt19937_64 rng(2);
    AttentionInputs in(c, rng);
    TensorStorage out = testing::poisoned({23, 4, 80}, c.dtype);
    TensorStorage lse = testing::poisoned({4, 23}, DataType::kFloat32);
    flash_attention(in.query, in.key, in.value, in.cu_q, in.cu_kv, Tensor(), c.attributes(), out,
                    lse, ctx);
    const std::vector<double> got = testing::to_doubles(lse);
    const double minus_inf = -std::numeric_limits<double>::infinity();
    for (std::int64_t h = 0; h < 4; ++h) {
      for (std::int64_t t : {0, 12, 20, 22}) EXPECT_EQ(got[h * 23 + t], minus_inf) << h << " " << t;
      EXPECT_TRUE(std::isfinite(got[h * 23 + 13])) << h;
    }
    EXPECT_EQ(testing::compare(lse, expected_lse(c, in), kLseTolerance), "");
  });
}

TEST(FlashAttentionLse, SlidingWindowsAndPagedCaches) {
  testing::for_each_implementation("flash_attention", [](const Context& ctx) {
    for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
      SCOPED_TRACE(std::string(name_of(dtype)));
      AttentionCase c;
      c.dtype = dtype, c.heads = 4, c.kv_heads = 1, c.head_size = 128;
      c.q_lens = {33, 9}, c.kv_lens = {33, 100};
      c.causal = true, c.sliding_window = 17;
      run_case(c, ctx, true);
      c.sliding_window.reset(), c.causal = false, c.window_left = 5, c.window_right = 11;
      c.scale = 0.3;
      run_case(c, ctx);
      c.window_left = c.window_right = -1, c.causal = true, c.block_size = 16;
      run_case(c, ctx);
    }
  });
}

TEST(FlashAttentionLse, OutputUnchangedAndClassForm) {
  testing::for_each_implementation("flash_attention", [](const Context& ctx) {
    AttentionCase c;
    c.heads = 4, c.kv_heads = 2, c.head_size = 64;
    c.q_lens = {9, 20}, c.kv_lens = {9, 20};
    c.causal = true;
    std::mt19937_64 rng(5);
    AttentionInputs first(c, rng), second(c, rng);
    TensorStorage with = testing::poisoned({29, 4, 64}, c.dtype);
    TensorStorage without = testing::poisoned({29, 4, 64}, c.dtype);
    TensorStorage lse = testing::poisoned({4, 29}, DataType::kFloat32);
    flash_attention(second.query, second.key, second.value, second.cu_q, second.cu_kv, Tensor(),
                    c.attributes(), without, ctx);
    const FlashAttention op(first.query, first.key, first.value, first.cu_q, first.cu_kv, Tensor(),
                            c.attributes(), with, lse, ctx.implementation_index);
    op(second.query, second.key, second.value, second.cu_q, second.cu_kv, Tensor(), with, lse);
    EXPECT_EQ(testing::to_doubles(with), testing::to_doubles(without));
    EXPECT_EQ(testing::compare(lse, expected_lse(c, second), kLseTolerance), "");
    // Prepared with softmax_lse, a run without one has another geometry.
    testing::expect_rejected(
        [&] {
          op(second.query, second.key, second.value, second.cu_q, second.cu_kv, Tensor(), with);
        },
        with, "softmax_lse");
  });
}

TEST(FlashAttentionLse, BadLseIsRefused) {
  AttentionCase c;
  c.heads = 4, c.kv_heads = 2, c.head_size = 64;
  c.q_lens = {5, 6}, c.kv_lens = {5, 6};
  std::mt19937_64 rng(9);
  AttentionInputs in(c, rng);
  TensorStorage out = testing::poisoned({11, 4, 64}, c.dtype);
  const auto call_with = [&](const TensorStorage& lse) {
    return [&] {
      flash_attention(in.query, in.key, in.value, in.cu_q, in.cu_kv, Tensor(), c.attributes(), out,
                      lse);
    };
  };
  TensorStorage swapped = testing::poisoned({11, 4}, DataType::kFloat32);  // [Tq, H]
  testing::expect_rejected(call_with(swapped), {&out, &swapped}, "softmax_lse",
                           ErrorKind::kInvalidArgument, {"[num_heads, Tq]"});
  TensorStorage flat = testing::poisoned({44}, DataType::kFloat32);
  testing::expect_rejected(call_with(flat), {&out, &flat}, "softmax_lse");
  TensorStorage bf16 = testing::poisoned({4, 11}, DataType::kBFloat16);
  testing::expect_rejected(call_with(bf16), {&out, &bf16}, "softmax_lse", ErrorKind::kInvalidType,
                           {"float32"});
  // The lse must not overlap the inputs or the output.
  TensorStorage buffer = testing::poisoned({11 * 4 * 64 + 44}, DataType::kFloat32);
  const Tensor out_part =
      buffer.view().slice(0, 0, 11 * 4 * 64).with_shape({11, 4, 64}, {256, 64, 1});
  const Tensor lse_part = buffer.view().slice(0, 11 * 4 * 64 - 1, 44).with_shape({4, 11}, {11, 1});
  EXPECT_THROW(flash_attention(in.query, in.key, in.value, in.cu_q, in.cu_kv, Tensor(),
                               c.attributes(), out_part, lse_part),
               Error);
}

}  // namespace
}  // namespace tileops::ops
