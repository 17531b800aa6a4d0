#include "tileops/ops/flash_attention.h"

#include <string>

#include "src/ops/contracts/attention_checks.h"
#include "tileops/core/checked_size.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "flash_attention";

std::string str(std::int64_t v) { return std::to_string(v); }

// The values of the index tensors: cumulative lengths and block ids, checked on every call
// (they are data, not geometry) before anything is written.
void check_values(const Tensor& query, const Tensor& key, const Tensor& cu_seqlens_q,
                  const Tensor& cu_seqlens_kv, const Tensor& block_table) {
  const ArgCheck check(kOp);
  if (attention_present(cu_seqlens_q)) {
    check_cumulative_lengths(check, cu_seqlens_q, "cu_seqlens_q", query.size(0));
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

void check_memory(const Tensor& query, const Tensor& key, const Tensor& value,
                  const Tensor& output) {
  const ArgCheck check(kOp);
  check.outputs_do_not_overlap({{query, "query"}, {key, "key"}, {value, "value"}},
                               {{output, "output"}}, false);
}

TensorDesc desc_or_absent(const Tensor& t) {
  return attention_present(t) ? TensorDesc::of(t) : TensorDesc::absent();
}

Problem make_problem(const Tensor& query, const Tensor& key, const Tensor& value,
                     const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                     const Tensor& block_table, const AttentionAttributes& attrs,
                     const Tensor& output) {
  const ArgCheck check(kOp);
  check.usable(query, "query");
  check.usable(key, "key");
  check.usable(value, "value");
  check.usable(output, "output");
  check.standard_float(query, "query");
  check.dtype_is(key, "key", query.dtype(), "same as 'query'");
  check.dtype_is(value, "value", query.dtype(), "same as 'query'");
  check.dtype_is(output, "output", query.dtype(), "same as 'query'");
  check.rank_is(query, "query", 3);
  check.shape_is(output, "output", query.shape(), "same as 'query' [Tq, H, D]");
  check.writable(output, "output");
  std::vector<double> attributes =
      resolve_attention_attributes(check, attrs, query.size(1), query.size(2));
  const std::int64_t kv_heads = attrs.num_kv_heads;
  const std::int64_t d = attrs.head_size;
  const bool paged = attention_present(block_table);
  // The batch: from whichever cumulative-length tensor is given (an absent one means 1).
  std::int64_t batch = 1;
  if (attention_present(cu_seqlens_q)) {
    check.rank_is(cu_seqlens_q, "cu_seqlens_q", 1);
    batch = cu_seqlens_q.size(0) - 1;
    if (batch < 0) {
      check.fail(ErrorKind::kInvalidArgument, "cu_seqlens_q", "shape [B + 1], B >= 0", "shape [0]");
    }
    check_index_tensor(check, cu_seqlens_q, "cu_seqlens_q", Dims{batch + 1}, "[B + 1]");
  }
  if (attention_present(cu_seqlens_kv)) {
    check_index_tensor(check, cu_seqlens_kv, "cu_seqlens_kv", Dims{batch + 1},
                       "[B + 1] as cu_seqlens_q (absent: one sequence)");
  }
  if (paged) {
    check.rank_is(key, "key", 4);
    const std::int64_t block_size = key.size(1);
    const Dims cache{key.size(0), block_size, kv_heads, d};
    check.shape_is(key, "key", cache, "[num_blocks, block_size, num_kv_heads, head_size]");
    check.shape_is(value, "value", cache, "same as 'key'");
    if (attrs.block_size != 0 && attrs.block_size != block_size) {
      check.fail(ErrorKind::kInvalidArgument, "block_size",
                 "0 or the key cache's block size " + str(block_size), str(attrs.block_size));
    }
    if (block_size < 1) {
      check.fail(ErrorKind::kInvalidArgument, "key", "a block size >= 1", key.describe());
    }
    check.rank_is(block_table, "block_table", 2);
    check_index_tensor(check, block_table, "block_table", Dims{batch, block_table.size(1)},
                       "[B, max_blocks]");
    attributes[kAttrBlockSize] = exact_attribute(check, block_size, "block_size");
  } else {
    check.rank_is(key, "key", 3);
    const Dims packed{key.size(0), kv_heads, d};
    check.shape_is(key, "key", packed, "[Tkv, num_kv_heads, head_size]");
    check.shape_is(value, "value", packed, "same as 'key'");
    if (attrs.block_size != 0) {
      check.fail(ErrorKind::kInvalidArgument, "block_size", "0 without a block_table",
                 str(attrs.block_size));
    }
  }
  check_values(query, key, cu_seqlens_q, cu_seqlens_kv, block_table);
  check_memory(query, key, value, output);
  return Problem{kOp,
                 {TensorDesc::of(query), TensorDesc::of(key), TensorDesc::of(value),
                  desc_or_absent(cu_seqlens_q), desc_or_absent(cu_seqlens_kv),
                  desc_or_absent(block_table), TensorDesc::of(output)},
                 std::move(attributes)};
}

}  // namespace

void flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                     const Tensor& block_table, const AttentionAttributes& attrs,
                     const Tensor& output, const Context& ctx) {
  const Tensor tensors[] = {query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, output};
  run_problem(
      make_problem(query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, attrs, output),
      tensors, ctx);
}

FlashAttention::FlashAttention(const Tensor& query, const Tensor& key, const Tensor& value,
                               const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                               const Tensor& block_table, const AttentionAttributes& attrs,
                               const Tensor& output, int implementation_index)
    : prepared_(
          make_problem(query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, attrs, output),
          {"query", "key", "value", "cu_seqlens_q", "cu_seqlens_kv", "block_table", "output"},
          implementation_index) {}

void FlashAttention::operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_kv,
                                const Tensor& block_table, const Tensor& output,
                                const Context& ctx) const {
  check_memory(query, key, value, output);
  const Tensor tensors[] = {query, key, value, cu_seqlens_q, cu_seqlens_kv, block_table, output};
  // The index values are data: checked on every call, once the geometry is known to be the
  // prepared one (otherwise prepared_.run raises the geometry error first).
  if (geometry_matches(prepared_.problem(), tensors)) {
    check_values(query, key, cu_seqlens_q, cu_seqlens_kv, block_table);
  }
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
