#include "tileops/ops/paged_attention.h"

#include <string>

#include "src/ops/contracts/attention_checks.h"
#include "tileops/core/checked_size.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "paged_attention";

std::string str(std::int64_t v) { return std::to_string(v); }

// Sequence lengths and the block ids they use, read where the kernel reads them (the host
// mirrors when given), on every call before anything is written.
void check_values(const Tensor& key_cache, const Tensor& seq_lens, const Tensor& block_table,
                  const Tensor& seq_lens_host, const Tensor& block_table_host) {
  const ArgCheck check(kOp);
  const bool host_lens = attention_present(seq_lens_host);
  const Tensor& lens = host_lens ? seq_lens_host : seq_lens;
  const bool host_table = attention_present(block_table_host);
  const Tensor& table = host_table ? block_table_host : block_table;
  const std::int64_t block_size = key_cache.size(1);
  const std::int64_t capacity =
      checked_mul(table.size(1), block_size,
                  "paged_attention: argument 'block_table': max_blocks * block_size");
  for (std::int64_t b = 0; b < lens.size(0); ++b) {
    const std::int64_t length = index_at(lens, b);
    if (length < 0 || length > capacity) {
      check.fail(ErrorKind::kInvalidArgument, host_lens ? "seq_lens_host" : "seq_lens",
                 "lengths in [0, max_blocks * block_size = " + str(capacity) + "]",
                 str(length) + " for sequence " + str(b));
    }
    check_block_ids(check, table, b, length, block_size, key_cache.size(0),
                    host_table ? "block_table_host" : "block_table");
  }
}

void check_memory(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                  const Tensor& output) {
  const ArgCheck check(kOp);
  check.outputs_do_not_overlap(
      {{query, "query"}, {key_cache, "key_cache"}, {value_cache, "value_cache"}},
      {{output, "output"}}, false);
}

TensorDesc desc_or_absent(const Tensor& t) {
  return attention_present(t) ? TensorDesc::of(t) : TensorDesc::absent();
}

Problem make_problem(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                     const Tensor& seq_lens, const Tensor& block_table,
                     const AttentionAttributes& attrs, const Tensor& output,
                     const Tensor& seq_lens_host, const Tensor& block_table_host) {
  const ArgCheck check(kOp);
  check.usable(query, "query");
  check.usable(key_cache, "key_cache");
  check.usable(value_cache, "value_cache");
  check.usable(output, "output");
  check.standard_float(query, "query");
  check.dtype_is(key_cache, "key_cache", query.dtype(), "same as 'query'");
  check.dtype_is(value_cache, "value_cache", query.dtype(), "same as 'query'");
  check.dtype_is(output, "output", query.dtype(), "same as 'query'");
  check.rank_is(query, "query", 3);
  check.shape_is(output, "output", query.shape(), "same as 'query' [B, H, D]");
  check.writable(output, "output");
  std::vector<double> attributes =
      resolve_attention_attributes(check, attrs, query.size(1), query.size(2));
  const std::int64_t batch = query.size(0);
  check.rank_is(key_cache, "key_cache", 4);
  const std::int64_t block_size = key_cache.size(1);
  const Dims cache{key_cache.size(0), block_size, attrs.num_kv_heads, attrs.head_size};
  check.shape_is(key_cache, "key_cache", cache,
                 "[num_blocks, block_size, num_kv_heads, head_size]");
  check.shape_is(value_cache, "value_cache", cache, "same as 'key_cache'");
  if (block_size < 1 || (attrs.block_size != 0 && attrs.block_size != block_size)) {
    check.fail(ErrorKind::kInvalidArgument, "block_size",
               "0 or the key cache's block size " + str(block_size) + " (>= 1)",
               str(attrs.block_size));
  }
  attributes[kAttrBlockSize] = exact_attribute(check, block_size, "block_size");
  check_index_tensor(check, seq_lens, "seq_lens", Dims{batch}, "[B], B = query.size(0)");
  check.rank_is(block_table, "block_table", 2);
  check_index_tensor(check, block_table, "block_table", Dims{batch, block_table.size(1)},
                     "[B, max_blocks]");
  if (attention_present(seq_lens_host)) {
    check_index_tensor(check, seq_lens_host, "seq_lens_host", Dims{batch}, "same as 'seq_lens'");
  }
  if (attention_present(block_table_host)) {
    check_index_tensor(check, block_table_host, "block_table_host", block_table.shape(),
                       "same as 'block_table'");
  }
  check_values(key_cache, seq_lens, block_table, seq_lens_host, block_table_host);
  check_memory(query, key_cache, value_cache, output);
  return Problem{kOp,
                 {TensorDesc::of(query), TensorDesc::of(key_cache), TensorDesc::of(value_cache),
                  TensorDesc::of(seq_lens), TensorDesc::of(block_table), TensorDesc::of(output),
                  desc_or_absent(seq_lens_host), desc_or_absent(block_table_host)},
                 std::move(attributes)};
}

}  // namespace

void paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                     const Tensor& seq_lens, const Tensor& block_table,
                     const AttentionAttributes& attrs, const Tensor& output,
                     const Tensor& seq_lens_host, const Tensor& block_table_host,
                     const Context& ctx) {
  const Tensor tensors[] = {query,       key_cache, value_cache,   seq_lens,
                            block_table, output,    seq_lens_host, block_table_host};
  run_problem(make_problem(query, key_cache, value_cache, seq_lens, block_table, attrs, output,
                           seq_lens_host, block_table_host),
              tensors, ctx);
}

PagedAttention::PagedAttention(const Tensor& query, const Tensor& key_cache,
                               const Tensor& value_cache, const Tensor& seq_lens,
                               const Tensor& block_table, const AttentionAttributes& attrs,
                               const Tensor& output, const Tensor& seq_lens_host,
                               const Tensor& block_table_host, int implementation_index)
    : prepared_(make_problem(query, key_cache, value_cache, seq_lens, block_table, attrs, output,
                             seq_lens_host, block_table_host),
                {"query", "key_cache", "value_cache", "seq_lens", "block_table", "output",
                 "seq_lens_host", "block_table_host"},
                implementation_index) {}

void PagedAttention::operator()(const Tensor& query, const Tensor& key_cache,
                                const Tensor& value_cache, const Tensor& seq_lens,
                                const Tensor& block_table, const Tensor& output,
                                const Tensor& seq_lens_host, const Tensor& block_table_host,
                                const Context& ctx) const {
  check_memory(query, key_cache, value_cache, output);
  const Tensor tensors[] = {query,       key_cache, value_cache,   seq_lens,
                            block_table, output,    seq_lens_host, block_table_host};
  // Lengths and block ids are data: checked on every call once the geometry is the prepared one
  // (otherwise prepared_.run raises the geometry error first).
  if (geometry_matches(prepared_.problem(), tensors)) {
    check_values(key_cache, seq_lens, block_table, seq_lens_host, block_table_host);
  }
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
