// paged_attention: declared (paged_attention.decl.h); the hooks check the attributes against
// the shapes, the caches and the index tensors and their values. The typed API takes
// AttentionAttributes, so its bodies are written here.
#include "tileops/ops/paged_attention.h"

#include <array>
#include <string>
#include <vector>

#include "src/ops/contracts/attention_checks.h"
#include "src/ops/contracts/paged_attention.decl.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

enum Arg { kQuery, kKeyCache, kValueCache, kSeqLens, kBlockTable, kOutput, kLensHost, kTableHost };
// Declared as num_heads, num_kv_heads, head_size, scale, causal, block_size, sliding_window,
// window_left, window_right (the Python order).
constexpr AttentionSlots kSlots{.num_heads = 0,
                                .num_kv_heads = 1,
                                .head_size = 2,
                                .scale = 3,
                                .causal = 4,
                                .window_left = 7,
                                .window_right = 8,
                                .block_size = 5,
                                .sliding_window = 6};

std::string str(std::int64_t v) { return std::to_string(v); }

// Sequence lengths and the block ids they use, read where the kernel reads them (the host
// mirrors when given), on every call before anything is written.
void check_values(const ArgCheck& check, std::span<const Tensor> t) {
  const bool host_lens = attention_present(t[kLensHost]);
  const Tensor& lens = t[host_lens ? kLensHost : kSeqLens];
  const bool host_table = attention_present(t[kTableHost]);
  const Tensor& table = t[host_table ? kTableHost : kBlockTable];
  const std::int64_t block_size = t[kKeyCache].size(1);
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
    check_block_ids(check, table, b, length, block_size, t[kKeyCache].size(0),
                    host_table ? "block_table_host" : "block_table");
  }
}

// After the declared query/cache/output rules: the attributes, the caches' shape and the index
// tensors (their host mirrors included).
void check_paged(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attributes) {
  const Tensor& key_cache = t[kKeyCache];
  const Tensor& block_table = t[kBlockTable];
  const AttentionAttributes attrs = declared_attention(attributes, kSlots, t[kQuery], key_cache);
  std::vector<double> resolved =
      resolve_attention_attributes(check, attrs, t[kQuery].size(1), t[kQuery].size(2));
  const std::int64_t batch = t[kQuery].size(0);
  const std::int64_t block_size = key_cache.size(1);
  const Dims cache{key_cache.size(0), block_size, attrs.num_kv_heads, attrs.head_size};
  check.shape_is(key_cache, "key_cache", cache,
                 "[num_blocks, block_size, num_kv_heads, head_size]");
  check.shape_is(t[kValueCache], "value_cache", cache, "same as 'key_cache'");
  if (block_size < 1 || (attrs.block_size != 0 && attrs.block_size != block_size)) {
    check.fail(ErrorKind::kInvalidArgument, "block_size",
               "0 or the key cache's block size " + str(block_size) + " (>= 1)",
               str(attrs.block_size));
  }
  resolved[kAttrBlockSize] = exact_attribute(check, block_size, "block_size");
  check_index_tensor(check, t[kSeqLens], "seq_lens", Dims{batch}, "[B], B = query.size(0)");
  check_index_tensor(check, block_table, "block_table", Dims{batch, block_table.size(1)},
                     "[B, max_blocks]");
  if (attention_present(t[kLensHost])) {
    check_index_tensor(check, t[kLensHost], "seq_lens_host", Dims{batch}, "same as 'seq_lens'");
  }
  if (attention_present(t[kTableHost])) {
    check_index_tensor(check, t[kTableHost], "block_table_host", block_table.shape(),
                       "same as 'block_table'");
  }
  check_values(check, t);
  store_layout(attributes, resolved, kSlots);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp paged_attention{
    decls::paged_attention, {.check = check_paged, .check_data = check_values}};
}  // namespace contracts

void paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                     const Tensor& seq_lens, const Tensor& block_table,
                     const AttentionAttributes& attrs, const Tensor& output,
                     const Tensor& seq_lens_host, const Tensor& block_table_host,
                     const Context& ctx) {
  const Tensor tensors[] = {query,       key_cache, value_cache,   seq_lens,
                            block_table, output,    seq_lens_host, block_table_host};
  contracts::paged_attention.call(tensors, attention_values(attrs, kSlots), ctx);
}

PagedAttention::PagedAttention(const Tensor& query, const Tensor& key_cache,
                               const Tensor& value_cache, const Tensor& seq_lens,
                               const Tensor& block_table, const AttentionAttributes& attrs,
                               const Tensor& output, const Tensor& seq_lens_host,
                               const Tensor& block_table_host, int implementation_index)
    : prepared_(contracts::paged_attention.prepare(
          std::array{query, key_cache, value_cache, seq_lens, block_table, output, seq_lens_host,
                     block_table_host},
          attention_values(attrs, kSlots), implementation_index)) {}

void PagedAttention::operator()(const Tensor& query, const Tensor& key_cache,
                                const Tensor& value_cache, const Tensor& seq_lens,
                                const Tensor& block_table, const Tensor& output,
                                const Tensor& seq_lens_host, const Tensor& block_table_host,
                                const Context& ctx) const {
  contracts::paged_attention.run(prepared_,
                                 {query, key_cache, value_cache, seq_lens, block_table, output,
                                  seq_lens_host, block_table_host},
                                 ctx);
}

}  // namespace tileops::ops
