// Megatron-style tensor parallelism of the decoder over `size` ranks: which rows and columns of
// each weight rank `rank` keeps. Column-parallel (output rows split): q/k/v by heads and gate/up
// by intermediate; row-parallel (input columns split, partial sums all-reduced): o_proj and
// down; vocab-parallel: lm_head rows (logits all-gathered). The embedding, norms and biases
// other than q/k/v's are replicated.
#pragma once

#include <cstdint>
#include <vector>

#include "examples/llama/config.h"
#include "tileops/core/tensor_storage.h"

namespace tileops::llama {

struct Shard {
  int rank = 0, size = 1;
  bool split() const { return size > 1; }
};

// Rows [begin, begin + count) of a weight.
struct RowRange {
  std::int64_t begin = 0, count = 0;
};

// The sizes of rank `shard.rank`: heads, kv_heads and intermediate divided by the ranks (vocab,
// hidden and the rest as given). With fewer KV heads than ranks (the ranks a multiple of them)
// each rank keeps one KV head, the one its query heads read, replicated over size / kv_heads
// ranks. Throws kInvalidArgument naming the config field (num_attention_heads,
// num_key_value_heads, intermediate_size) that `size` does not fit, or when there are more
// ranks than vocabulary rows.
Config shard_config(const Config& full, Shard shard);

// Every rank's number of vocabulary rows (the first vocab % size ranks get one more) and the
// first row of rank `rank`.
std::vector<std::int64_t> vocab_counts(std::int64_t vocab, int size);
RowRange vocab_rows(std::int64_t vocab, Shard shard);

// The rows a rank keeps of the fused weights (weights.h): its q heads, k heads, v heads (the
// KV heads possibly shared with other ranks); its gate rows, up rows.
std::vector<RowRange> qkv_rows(const Config& full, Shard shard);
std::vector<RowRange> gate_up_rows(const Config& full, Shard shard);
// The columns a rank keeps of the row-parallel weights: o_proj [hidden, q_size] and
// down [hidden, intermediate].
RowRange o_proj_columns(const Config& full, Shard shard);
RowRange down_columns(const Config& full, Shard shard);

// A new tensor of `t`'s rows in `ranges`, stacked (dim 0), and of its columns in `columns`
// (dim 1; the whole width when count is 0), in `t`'s dtype. Reads only those elements.
TensorStorage take_rows(const Tensor& t, const std::vector<RowRange>& ranges,
                        RowRange columns = {});

}  // namespace tileops::llama
