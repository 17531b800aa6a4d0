// flash_attention: declared (flash_attention.decl.h); the hooks check what the declaration
// cannot state (the attributes against the shapes, packed or paged keys, the index tensors and
// their values). The typed API takes AttentionAttributes, so its bodies are written here.
#include "tileops/ops/flash_attention.h"

#include <array>
#include <string>
#include <vector>

#include "src/ops/contracts/attention_checks.h"
#include "src/ops/contracts/flash_attention.decl.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr int kQuery = tensor_index(decls::flash_attention, "query");
constexpr int kKey = tensor_index(decls::flash_attention, "key");
constexpr int kValue = tensor_index(decls::flash_attention, "value");
constexpr int kCuSeqlensQ = tensor_index(decls::flash_attention, "cu_seqlens_q");
constexpr int kCuSeqlensKv = tensor_index(decls::flash_attention, "cu_seqlens_kv");
constexpr int kBlockTable = tensor_index(decls::flash_attention, "block_table");
constexpr int kSoftmaxLse = tensor_index(decls::flash_attention, "softmax_lse");
constexpr AttentionSlots kSlots = attention_slots(decls::flash_attention);

std::string str(std::int64_t v) { return std::to_string(v); }

// flash_attn_varlen_func's softmax_lse: one value per query head and packed query row.
Dims lse_shape(const Tensor& query) { return Dims{query.size(1), query.size(0)}; }

// The values of the index tensors: cumulative lengths and block ids, checked on every call
// (they are data, not geometry) before anything is written.
void check_values(const ArgCheck& check, std::span<const Tensor> t) {
  const Tensor& key = t[kKey];
  const Tensor& cu_seqlens_kv = t[kCuSeqlensKv];
  const Tensor& block_table = t[kBlockTable];
  if (attention_present(t[kCuSeqlensQ])) {
    check_cumulative_lengths(check, t[kCuSeqlensQ], "cu_seqlens_q", t[kQuery].size(0));
  }
  if (!attention_present(block_table)) {
    if (attention_present(cu_seqlens_kv)) {
      check_cumulative_lengths(check, cu_seqlens_kv, "cu_seqlens_kv", key.size(0));
    }
    return;
  }
  const std::int64_t block_size = key.size(1);
  const std::int64_t capacity =
      checked_mul(block_table.size(1), block_size,
                  "flash_attention: argument 'block_table': max_blocks * block_size");
  if (attention_present(cu_seqlens_kv))
    check_cumulative_lengths(check, cu_seqlens_kv, "cu_seqlens_kv", -1);
  for (std::int64_t b = 0; b < block_table.size(0); ++b) {
    const std::int64_t length = attention_present(cu_seqlens_kv)
                                    ? index_at(cu_seqlens_kv, b + 1) - index_at(cu_seqlens_kv, b)
                                    : capacity;
    if (length > capacity) {
      check.fail(ErrorKind::kInvalidArgument, "cu_seqlens_kv",
                 "kv lengths <= max_blocks * block_size = " + str(capacity),
                 str(length) + " for sequence " + str(b));
    }
    check_block_ids(check, block_table, b, length, block_size, key.size(0));
  }
}

// After the declared query/output rules: the attributes, the key/value layout (packed or
// paged) and the index tensors, whose batch comes from whichever cumulative-length tensor is
// given (an absent one means 1).
void check_flash(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attributes) {
  const Tensor& key = t[kKey];
  const Tensor& cu_seqlens_q = t[kCuSeqlensQ];
  const Tensor& block_table = t[kBlockTable];
  const AttentionAttributes attrs = declared_attention(attributes, kSlots, t[kQuery], key);
  std::vector<double> resolved =
      resolve_attention_attributes(check, attrs, t[kQuery].size(1), t[kQuery].size(2));
  const std::int64_t kv_heads = attrs.num_kv_heads;
  const std::int64_t d = attrs.head_size;
  std::int64_t batch = 1;
  if (attention_present(cu_seqlens_q)) {
    batch = cu_seqlens_q.size(0) - 1;
    if (batch < 0) {
      check.fail(ErrorKind::kInvalidArgument, "cu_seqlens_q", "shape [B + 1], B >= 0", "shape [0]");
    }
    check_index_tensor(check, cu_seqlens_q, "cu_seqlens_q", Dims{batch + 1}, "[B + 1]");
  }
  if (attention_present(t[kCuSeqlensKv])) {
    check_index_tensor(check, t[kCuSeqlensKv], "cu_seqlens_kv", Dims{batch + 1},
                       "[B + 1] as cu_seqlens_q (absent: one sequence)");
  }
  if (attention_present(block_table)) {
    check.rank_is(key, "key", 4);
    const std::int64_t block_size = key.size(1);
    const Dims cache{key.size(0), block_size, kv_heads, d};
    check.shape_is(key, "key", cache, "[num_blocks, block_size, num_kv_heads, head_size]");
    check.shape_is(t[kValue], "value", cache, "same as 'key'");
    if (attrs.block_size != 0 && attrs.block_size != block_size) {
      check.fail(ErrorKind::kInvalidArgument, "block_size",
                 "0 or the key cache's block size " + str(block_size), str(attrs.block_size));
    }
    if (block_size < 1) {
      check.fail(ErrorKind::kInvalidArgument, "key", "a block size >= 1", key.describe());
    }
    check_index_tensor(check, block_table, "block_table", Dims{batch, block_table.size(1)},
                       "[B, max_blocks]");
    resolved[kAttrBlockSize] = exact_attribute(check, block_size, "block_size");
  } else {
    check.rank_is(key, "key", 3);
    const Dims packed{key.size(0), kv_heads, d};
    check.shape_is(key, "key", packed, "[Tkv, num_kv_heads, head_size]");
    check.shape_is(t[kValue], "value", packed, "same as 'key'");
    if (attrs.block_size != 0) {
      check.fail(ErrorKind::kInvalidArgument, "block_size", "0 without a block_table",
                 str(attrs.block_size));
    }
  }
  if (attention_present(t[kSoftmaxLse])) {
    check.rank_is(t[kSoftmaxLse], "softmax_lse", 2);
    check.shape_is(t[kSoftmaxLse], "softmax_lse", lse_shape(t[kQuery]), "[num_heads, Tq]");
  }
  check_values(check, t);
  store_layout(attributes, resolved, kSlots);
}

// The declared rule gives the output's shape; only softmax_lse's comes here.
Dims output_shape(std::string_view /*op*/, int /*arg*/, std::span<const Tensor> t,
                  std::span<const double> /*attributes*/) {
  return lse_shape(t[kQuery]);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp flash_attention{
    decls::flash_attention,
    {.check = check_flash, .output_shape = output_shape, .check_data = check_values}};
}  // namespace contracts

void flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                     const Tensor& block_table, const AttentionAttributes& attrs,
                     const Tensor& output, const Context& ctx) {
  flash_attention(query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, attrs, output,
                  Tensor(), ctx);
}

void flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                     const Tensor& block_table, const AttentionAttributes& attrs,
                     const Tensor& output, const Tensor& softmax_lse, const Context& ctx) {
  const Tensor tensors[] = {query,         key,         value,  cu_seqlens_q,
                            cu_seqlens_kv, block_table, output, softmax_lse};
  contracts::flash_attention.call(tensors, attention_values(attrs, kSlots), ctx);
}

FlashAttention::FlashAttention(const Tensor& query, const Tensor& key, const Tensor& value,
                               const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                               const Tensor& block_table, const AttentionAttributes& attrs,
                               const Tensor& output, int implementation_index)
    : FlashAttention(query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, attrs, output,
                     Tensor(), implementation_index) {}

FlashAttention::FlashAttention(const Tensor& query, const Tensor& key, const Tensor& value,
                               const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                               const Tensor& block_table, const AttentionAttributes& attrs,
                               const Tensor& output, const Tensor& softmax_lse,
                               int implementation_index)
    : prepared_(contracts::flash_attention.prepare(
          std::array{query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, output,
                     softmax_lse},
          attention_values(attrs, kSlots), implementation_index)) {}

void FlashAttention::operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                                const Tensor& block_table, const Tensor& output,
                                const Context& ctx) const {
  (*this)(query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, output, Tensor(), ctx);
}

void FlashAttention::operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                                const Tensor& block_table, const Tensor& output,
                                const Tensor& softmax_lse, const Context& ctx) const {
  contracts::flash_attention.run(
      prepared_, {query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, output, softmax_lse},
      ctx);
}

}  // namespace tileops::ops
