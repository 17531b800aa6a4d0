// flash_attention and paged_attention as index 1 ("tl"): the host reads the sequences (lengths,
// block tables, ALiBi slopes, fp8 scales), lists the work items and runs the tile-language kernel
// of attention_kernel.h. Prefill items are 64 positions of one query head (its keys visited tile
// by tile, tiles wholly past the causal diagonal or outside the window skipped); decode items are
// one sequence's query row for up to 8 heads of one kv head, so that the group shares each key
// and value tile. Items are listed most expensive first (the blocks take them round-robin).
#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "src/ops/contracts/flash_attention.decl.h"
#include "src/ops/contracts/paged_attention.decl.h"
#include "src/ops/cpu/attention/attention_plan.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/tl/attention_kernel.h"
#include "src/ops/cpu/tl/folded_loop.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::ops::cpu {
namespace {

using tl_impl::AttentionLaunch;
using tl_impl::kItemFields;
using tl_impl::KvOperand;

bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

constexpr std::int64_t kPrefillPositions = 64;
constexpr std::int64_t kMaxDecodeHeads = 8;

// Keys or values, packed [T, Hkv, D] (one block of T rows), paged [blocks, block_size, Hkv, D] or
// split [blocks, block_size, Hkv, D / x, x].
KvOperand kv_operand(const Tensor& t, float scale) {
  KvOperand kv;
  kv.data = tl_impl::pointer_at(t, 0);
  kv.scale = scale;
  if (t.rank() == 3) {
    kv.rows = t.size(0);
    kv.strides = {0, t.stride(0), t.stride(1), t.stride(2), 0};
    return kv;
  }
  kv.blocks = t.size(0), kv.rows = t.size(1);
  kv.strides = {t.stride(0), t.stride(1), t.stride(2), t.stride(3), 0};
  if (t.rank() == 5) kv.strides[4] = t.stride(4), kv.split = t.size(4);
  return kv;
}

// The attributes and the query/output of a launch; the items and tables are the caller's.
AttentionLaunch base_launch(const AttentionShape& shape, const Tensor& query,
                            const Tensor& output) {
  AttentionLaunch a;
  a.query = tl_impl::pointer_at(query, 0);
  a.output = tl_impl::pointer_at(output, 0);
  a.query_rows = query.size(0);
  a.query_strides = {query.stride(0), query.stride(1), query.stride(2)};
  a.output_strides = {output.stride(0), output.stride(1), output.stride(2)};
  a.kv_heads = shape.kv_heads, a.group = shape.group, a.head_size = shape.head_size;
  a.scale = shape.scale;
  a.window_left = shape.window_left, a.window_right = shape.window_right;
  a.block_size = shape.block_size;
  return a;
}

// A block table as contiguous int64 [rows, cols].
void read_table(const Tensor& table, AttentionLaunch& a) {
  a.table_cols = std::max<std::int64_t>(1, table.size(1));
  a.table.assign(static_cast<std::size_t>(table.size(0) * a.table_cols), 0);
  for (std::int64_t b = 0; b < table.size(0); ++b) {
    for (std::int64_t j = 0; j < table.size(1); ++j) {
      a.table[static_cast<std::size_t>(b * a.table_cols + j)] = index_at(table, b, j);
    }
  }
}

// Appends `items` (with their costs) to the launch, most expensive first.
void order_items(std::vector<std::array<std::int64_t, kItemFields>>& items,
                 std::vector<std::int64_t>& cost, AttentionLaunch& a) {
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return cost[x] > cost[y]; });
  a.items.reserve(items.size() * kItemFields);
  for (std::size_t i : order) a.items.insert(a.items.end(), items[i].begin(), items[i].end());
}

class FlashAttentionTl final : public Operator {
 public:
  explicit FlashAttentionTl(const Problem& problem) : shape_(AttentionShape::of(problem)) {}

  void run(std::span<const Tensor> t, const Context& ctx) const override {
    constexpr int kQuery = tensor_index(decls::flash_attention, "query");
    constexpr int kKey = tensor_index(decls::flash_attention, "key");
    constexpr int kValue = tensor_index(decls::flash_attention, "value");
    constexpr int kCuQ = tensor_index(decls::flash_attention, "cu_seqlens_q");
    constexpr int kCuKv = tensor_index(decls::flash_attention, "cu_seqlens_kv");
    constexpr int kTable = tensor_index(decls::flash_attention, "block_table");
    constexpr int kOutput = tensor_index(decls::flash_attention, "output");
    constexpr int kLse = tensor_index(decls::flash_attention, "softmax_lse");
    const Tensor &query = t[kQuery], &cu_q = t[kCuQ], &cu_kv = t[kCuKv], &table = t[kTable];
    const bool paged = shape_.block_size > 0;
    AttentionLaunch a = base_launch(shape_, query, t[kOutput]);
    a.key = kv_operand(t[kKey], 1.0f), a.value = kv_operand(t[kValue], 1.0f);
    if (present(t[kLse])) {
      a.lse = tl_impl::pointer_at(t[kLse], 0);
      a.lse_strides = {t[kLse].stride(0), t[kLse].stride(1)};
    }
    if (paged) read_table(table, a);
    a.positions = kPrefillPositions, a.heads_per_tile = 1;
    std::int64_t batch = 1;
    if (present(cu_q)) {
      batch = cu_q.size(0) - 1;
    } else if (present(cu_kv)) {
      batch = cu_kv.size(0) - 1;
    }
    std::vector<std::array<std::int64_t, kItemFields>> items;
    std::vector<std::int64_t> cost;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t q_start = present(cu_q) ? index_at(cu_q, b) : 0;
      const std::int64_t q_len = present(cu_q) ? index_at(cu_q, b + 1) - q_start : query.size(0);
      std::int64_t kv_start = 0, kv_len = 0;
      if (present(cu_kv)) {
        kv_start = paged ? 0 : index_at(cu_kv, b);
        kv_len = index_at(cu_kv, b + 1) - index_at(cu_kv, b);
      } else {
        kv_len = paged ? table.size(1) * shape_.block_size : t[kKey].size(0);
      }
      const Sequence seq{q_start, q_len, kv_start, kv_len};
      for (std::int64_t i = 0; i < q_len; i += kPrefillPositions) {
        const std::int64_t n = std::min(kPrefillPositions, q_len - i);
        const VisibleKeys first = visible_keys(shape_, seq, i);
        const VisibleKeys last = visible_keys(shape_, seq, i + n - 1);
        // Key tiles visited, plus the rows' own load and store.
        const std::int64_t keys = std::max<std::int64_t>(0, last.hi - first.lo + 1);
        for (std::int64_t h = 0; h < shape_.heads; ++h) {
          items.push_back({paged ? b : 0, q_start + i, n, h / shape_.group, h % shape_.group,
                           kv_start, kv_len, i + kv_len - q_len});
          cost.push_back(keys + 64);
        }
      }
    }
    order_items(items, cost, a);
    tl_impl::launch_attention(a, ctx.threads());
  }

 private:
  AttentionShape shape_;
};

class PagedAttentionTl final : public Operator {
 public:
  explicit PagedAttentionTl(const Problem& problem) : shape_(AttentionShape::of(problem)) {}

  void run(std::span<const Tensor> t, const Context& ctx) const override {
    constexpr int kQuery = tensor_index(decls::paged_attention, "query");
    constexpr int kKeyCache = tensor_index(decls::paged_attention, "key_cache");
    constexpr int kValueCache = tensor_index(decls::paged_attention, "value_cache");
    constexpr int kSeqLens = tensor_index(decls::paged_attention, "seq_lens");
    constexpr int kTable = tensor_index(decls::paged_attention, "block_table");
    constexpr int kOutput = tensor_index(decls::paged_attention, "output");
    constexpr int kLensHost = tensor_index(decls::paged_attention, "seq_lens_host");
    constexpr int kTableHost = tensor_index(decls::paged_attention, "block_table_host");
    constexpr int kAlibi = tensor_index(decls::paged_attention, "alibi_slopes");
    constexpr int kKScale = tensor_index(decls::paged_attention, "k_scale");
    constexpr int kVScale = tensor_index(decls::paged_attention, "v_scale");
    const Tensor& query = t[kQuery];
    const Tensor& lens = present(t[kLensHost]) ? t[kLensHost] : t[kSeqLens];
    const Tensor& table = present(t[kTableHost]) ? t[kTableHost] : t[kTable];
    AttentionLaunch a = base_launch(shape_, query, t[kOutput]);
    // One query row per sequence, the last position: keys right of it do not exist.
    a.window_right = -1;
    const bool fp8 = t[kKeyCache].dtype() != query.dtype();
    a.key = kv_operand(t[kKeyCache], fp8 ? scale_of(t[kKScale]) : 1.0f);
    a.value = kv_operand(t[kValueCache], fp8 ? scale_of(t[kVScale]) : 1.0f);
    read_table(table, a);
    if (present(t[kAlibi])) {
      const Tensor& slopes = t[kAlibi];
      for (std::int64_t h = 0; h < shape_.heads; ++h) {
        a.alibi.push_back(slopes.data_as<const float>()[h * slopes.stride(0)]);
      }
    }
    // Query heads per item: 1, 4 or 8 (few specialisations; a group of 2 or 3 computes a row or
    // two of padding, which a memory-bound decode does not notice).
    const std::int64_t tile_heads = shape_.group == 1 ? 1 : shape_.group <= 4 ? 4 : kMaxDecodeHeads;
    a.positions = 1, a.heads_per_tile = tile_heads;
    std::vector<std::array<std::int64_t, kItemFields>> items;
    std::vector<std::int64_t> cost;
    for (std::int64_t b = 0; b < query.size(0); ++b) {
      const std::int64_t len = index_at(lens, b);
      for (std::int64_t h = 0; h < shape_.kv_heads; ++h) {
        for (std::int64_t g = 0; g < shape_.group; g += tile_heads) {
          items.push_back({b, b, 1, h, g, 0, len, len - 1});
          cost.push_back(len);
        }
      }
    }
    order_items(items, cost, a);
    tl_impl::launch_attention(a, ctx.threads());
  }

 private:
  static float scale_of(const Tensor& t) { return present(t) ? *t.data_as<const float>() : 1.0f; }

  AttentionShape shape_;
};

}  // namespace

void register_tl_attention(std::vector<Implementation>& out) {
  out.push_back({"flash_attention", DeviceType::kCpu, 1, "tl",
                 [](const Problem& p) { return std::make_unique<FlashAttentionTl>(p); }});
  out.push_back({"paged_attention", DeviceType::kCpu, 1, "tl",
                 [](const Problem& p) { return std::make_unique<PagedAttentionTl>(p); }});
}

}  // namespace tileops::ops::cpu
