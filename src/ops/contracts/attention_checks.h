// Validation shared by flash_attention and paged_attention: attribute resolution (scale, the two
// window forms, causal), the int32 index tensors, and the checks of their values (cumulative
// lengths, sequence lengths, block ids) that run on every call before anything is written.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "src/ops/framework/arg_check.h"
#include "src/ops/framework/attention_layout.h"
#include "tileops/ops/flash_attention.h"
#include "tileops/ops/problem.h"

namespace tileops::ops {

// Checks num_heads/num_kv_heads/head_size against the query's [.., H, D] and each other and
// resolves scale and the windows (sliding_window w == (w-1, 0), both forms must agree; causal
// bounds the right window at 0). block_size is left 0.
std::vector<double> resolve_attention_attributes(const ArgCheck& check,
                                                 const AttentionAttributes& attrs,
                                                 std::int64_t query_heads,
                                                 std::int64_t query_head_size);

// `value` as a Problem attribute (a double): exact up to 2^53, refused above, naming `arg`.
double exact_attribute(const ArgCheck& check, std::int64_t value, std::string_view arg);

// An int32 tensor of exactly `shape` (any strides).
void check_index_tensor(const ArgCheck& check, const Tensor& t, std::string_view arg,
                        const Dims& shape, std::string_view why);

bool attention_present(const Tensor& t);

// True when every tensor has the geometry the Problem was built for (absent stays absent).
bool geometry_matches(const Problem& problem, std::span<const Tensor> tensors);

// cu_seqlens values: starts at 0, never decreases, ends at `total` (total < 0: any end).
void check_cumulative_lengths(const ArgCheck& check, const Tensor& cu, std::string_view arg,
                              std::int64_t total);

// Every block id that a sequence of `length` keys uses (its first ceil(length / block_size)
// entries of row b) is in [0, num_blocks).
void check_block_ids(const ArgCheck& check, const Tensor& block_table, std::int64_t b,
                     std::int64_t length, std::int64_t block_size, std::int64_t num_blocks,
                     std::string_view arg = "block_table");

}  // namespace tileops::ops
