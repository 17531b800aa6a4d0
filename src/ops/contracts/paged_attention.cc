// paged_attention: declared (paged_attention.decl.h); the hooks check the attributes against
// the shapes, the caches and the index tensors and their values. The typed API takes
// AttentionAttributes, so its bodies are written here.
#include "tileops/ops/paged_attention.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "src/ops/contracts/attention_checks.h"
#include "src/ops/contracts/paged_attention.decl.h"
#include "tileops/core/checked_size.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr int kQuery = tensor_index(decls::paged_attention, "query");
constexpr int kKeyCache = tensor_index(decls::paged_attention, "key_cache");
constexpr int kValueCache = tensor_index(decls::paged_attention, "value_cache");
constexpr int kSeqLens = tensor_index(decls::paged_attention, "seq_lens");
constexpr int kBlockTable = tensor_index(decls::paged_attention, "block_table");
constexpr int kLensHost = tensor_index(decls::paged_attention, "seq_lens_host");
constexpr int kTableHost = tensor_index(decls::paged_attention, "block_table_host");
constexpr int kAlibiSlopes = tensor_index(decls::paged_attention, "alibi_slopes");
constexpr int kKScale = tensor_index(decls::paged_attention, "k_scale");
constexpr int kVScale = tensor_index(decls::paged_attention, "v_scale");
constexpr AttentionSlots kSlots = attention_slots(decls::paged_attention);

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

// A cache is `shape` [num_blocks, block_size, Hkv, D], or the same with D split in two
// [.., D / x, x] (x >= 1 divides D): vLLM's key cache [num_blocks, Hkv, D / x, block_size, x]
// permuted into this order, read in place.
void check_cache_shape(const ArgCheck& check, const Tensor& cache, std::string_view arg,
                       const Dims& shape, std::string_view why) {
  const std::string expected =
      std::string(why) + " or [num_blocks, block_size, num_kv_heads, head_size / x, x]";
  if (cache.rank() == 4) {
    check.shape_is(cache, arg, shape, expected);
    return;
  }
  const std::int64_t x = cache.rank() == 5 ? cache.size(4) : 0;
  const bool split = x >= 1 && cache.size(3) * x == shape[3];
  if (!split || cache.size(0) != shape[0] || cache.size(1) != shape[1] ||
      cache.size(2) != shape[2]) {
    check.fail(ErrorKind::kInvalidArgument, arg, expected + " with " + shape.to_string(),
               cache.shape().to_string());
  }
}

// The caches share the query's dtype, or both hold one 8-bit float format (read as fp8 * scale,
// scales of one element each).
void check_cache_dtypes(const ArgCheck& check, std::span<const Tensor> t) {
  const DataType query = t[kQuery].dtype(), key = t[kKeyCache].dtype();
  const bool fp8 = key == DataType::kFloat8E4M3FN || key == DataType::kFloat8E5M2;
  if (key != query && !fp8) {
    check.fail(ErrorKind::kInvalidType, "key_cache",
               std::string("same as 'query' (") + std::string(name_of(query)) +
                   "), or float8_e4m3fn/float8_e5m2 (an fp8 cache)",
               std::string(name_of(key)));
  }
  if (t[kValueCache].dtype() != key) {
    check.fail(ErrorKind::kInvalidType, "value_cache",
               std::string("same as 'key_cache' (") + std::string(name_of(key)) + ")",
               std::string(name_of(t[kValueCache].dtype())));
  }
  for (const auto& [index, name] : {std::pair{kKScale, "k_scale"}, std::pair{kVScale, "v_scale"}}) {
    if (attention_present(t[index]) && t[index].numel() != 1) {
      check.fail(ErrorKind::kInvalidArgument, name, "one element (shape [] or [1])",
                 t[index].shape().to_string());
    }
  }
}

// After the declared query/cache/output rules: the attributes, the caches' shape and the index
// tensors (their host mirrors included).
void check_paged(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attributes) {
  const Tensor& key_cache = t[kKeyCache];
  const Tensor& block_table = t[kBlockTable];
  // A split cache [.., Hkv, D / x, x] has its heads one dim further in.
  const AttentionAttributes attrs =
      declared_attention(attributes, kSlots, t[kQuery], key_cache, key_cache.rank() == 5 ? -3 : -2);
  std::vector<double> resolved =
      resolve_attention_attributes(check, attrs, t[kQuery].size(1), t[kQuery].size(2));
  const std::int64_t batch = t[kQuery].size(0);
  const std::int64_t block_size = key_cache.size(1);
  const Dims cache{key_cache.size(0), block_size, attrs.num_kv_heads, attrs.head_size};
  check_cache_shape(check, key_cache, "key_cache", cache,
                    "[num_blocks, block_size, num_kv_heads, head_size]");
  check_cache_shape(check, t[kValueCache], "value_cache", cache, "as 'key_cache'");
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
  if (attention_present(t[kAlibiSlopes])) {
    check.shape_is(t[kAlibiSlopes], "alibi_slopes", Dims{attrs.num_heads}, "[num_heads]");
  }
  check_cache_dtypes(check, t);
  check_values(check, t);
  store_layout(attributes, resolved, kSlots);
}

// The options of the forms that take only the host mirrors.
PagedAttentionOptions mirrors(const Tensor& seq_lens_host, const Tensor& block_table_host) {
  PagedAttentionOptions options;
  options.seq_lens_host = seq_lens_host, options.block_table_host = block_table_host;
  return options;
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
  paged_attention(query, key_cache, value_cache, seq_lens, block_table, attrs, output,
                  mirrors(seq_lens_host, block_table_host), ctx);
}

void paged_attention(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
                     const Tensor& seq_lens, const Tensor& block_table,
                     const AttentionAttributes& attrs, const Tensor& output,
                     const PagedAttentionOptions& options, const Context& ctx) {
  const Tensor tensors[] = {query,
                            key_cache,
                            value_cache,
                            seq_lens,
                            block_table,
                            output,
                            options.seq_lens_host,
                            options.block_table_host,
                            options.alibi_slopes,
                            options.k_scale,
                            options.v_scale};
  contracts::paged_attention.call(tensors, attention_values(attrs, kSlots), ctx);
}

PagedAttention::PagedAttention(const Tensor& query, const Tensor& key_cache,
                               const Tensor& value_cache, const Tensor& seq_lens,
                               const Tensor& block_table, const AttentionAttributes& attrs,
                               const Tensor& output, const Tensor& seq_lens_host,
                               const Tensor& block_table_host, int implementation_index)
    : PagedAttention(query, key_cache, value_cache, seq_lens, block_table, attrs, output,
                     mirrors(seq_lens_host, block_table_host), implementation_index) {}

PagedAttention::PagedAttention(const Tensor& query, const Tensor& key_cache,
                               const Tensor& value_cache, const Tensor& seq_lens,
                               const Tensor& block_table, const AttentionAttributes& attrs,
                               const Tensor& output, const PagedAttentionOptions& options,
                               int implementation_index)
    : prepared_(contracts::paged_attention.prepare(
          std::array{query, key_cache, value_cache, seq_lens, block_table, output,
                     options.seq_lens_host, options.block_table_host, options.alibi_slopes,
                     options.k_scale, options.v_scale},
          attention_values(attrs, kSlots), implementation_index)) {}

void PagedAttention::operator()(const Tensor& query, const Tensor& key_cache,
                                const Tensor& value_cache, const Tensor& seq_lens,
                                const Tensor& block_table, const Tensor& output,
                                const Tensor& seq_lens_host, const Tensor& block_table_host,
                                const Context& ctx) const {
  (*this)(query, key_cache, value_cache, seq_lens, block_table, output,
          mirrors(seq_lens_host, block_table_host), ctx);
}

void PagedAttention::operator()(const Tensor& query, const Tensor& key_cache,
                                const Tensor& value_cache, const Tensor& seq_lens,
                                const Tensor& block_table, const Tensor& output,
                                const PagedAttentionOptions& options, const Context& ctx) const {
  contracts::paged_attention.run(
      prepared_,
      {query, key_cache, value_cache, seq_lens, block_table, output, options.seq_lens_host,
       options.block_table_host, options.alibi_slopes, options.k_scale, options.v_scale},
      ctx);
}

}  // namespace tileops::ops
