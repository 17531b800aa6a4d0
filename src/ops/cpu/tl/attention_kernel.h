// The tile-language attention kernel behind index 1 ("tl") of flash_attention and
// paged_attention: one online-softmax kernel over work items that the host lists. An item is a
// tile of query rows, `positions` consecutive positions × `heads_per_tile` query heads of one kv
// head (prefill: 64 positions of one head; decode: one position × up to 8 of the group's heads, so
// that the group shares every key and value tile), against the keys its rows can see, visited in
// tiles of 64 keys concatenated from pieces that never cross a cache block: a block id is read from
// the block table per piece (a packed sequence is one block). Tiles wholly outside every row's
// window or past the causal diagonal are never visited; tiles crossing a mask edge are masked per
// row; masked tiles whose values hold a NaN or Inf accumulate only each row's visible keys (0 · NaN
// would be NaN). All state is float32; every row's log-sum-exp is written too (flash_attention's
// softmax_lse, or scratch).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tileops/runtime/thread_pool.h"
#include "tileops/tl/jit.h"

namespace tileops::ops::cpu::tl_impl {

// The fields of one work item (kItemFields int64 each, in this order).
enum AttentionItemField : std::int64_t {
  kItemTableRow,    // the sequence's row of the block table (packed: 0)
  kItemQueryRow,    // the item's first query row (of the query tensor's dim 0)
  kItemPositions,   // positions in the item (<= positions per tile)
  kItemKvHead,      // the kv head
  kItemGroupStart,  // the item's first query head within the kv head's group
  kItemKvBase,      // packed: the sequence's first key row; paged: 0
  kItemKvLen,       // the sequence's keys
  kItemDiagonal,    // key index of the first position's diagonal: first + kv_len - q_len
  kItemFields
};

// Keys or values: a 4-D view [blocks, rows, kv_heads, head_size] (packed [T, Hkv, D] is one
// block of T rows), or 5-D with head_size split as [.., D / split, split].
struct KvOperand {
  tl::Pointer data;
  std::int64_t blocks = 1, rows = 0;
  std::array<std::int64_t, 5> strides{};  // block, row, head, d (or d / split), split piece
  std::int64_t split = 0;                 // 0: not split
  float scale = 1.0f;                     // 8-bit float caches: read as fp8 · scale
};

struct AttentionLaunch {
  tl::Pointer query, output;  // [rows, heads, head_size] each, strided
  // The log-sum-exp of each row's scores, float32 [heads, rows] (null: not requested).
  tl::Pointer lse{nullptr, DataType::kFloat32};
  std::array<std::int64_t, 2> lse_strides{};
  std::int64_t query_rows = 0;
  std::array<std::int64_t, 3> query_strides{}, output_strides{};
  KvOperand key, value;
  std::int64_t kv_heads = 1, group = 1, head_size = 0;
  float scale = 1.0f;
  std::int64_t window_left = -1, window_right = -1;  // -1: unbounded
  std::int64_t block_size = 0;                       // 0: packed
  std::vector<std::int64_t> table;                   // [table_rows, table_cols] block ids
  std::int64_t table_cols = 1;
  std::vector<float> alibi;  // per query head, or empty
  std::int64_t positions = 64, heads_per_tile = 1;
  std::vector<std::int64_t> items;  // kItemFields per item, in the order blocks take them
};

// Runs every item of `launch` on `pool` (items are taken round-robin by the pool's blocks).
void launch_attention(const AttentionLaunch& launch, ThreadPool& pool);

}  // namespace tileops::ops::cpu::tl_impl
