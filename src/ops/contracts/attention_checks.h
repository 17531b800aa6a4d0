// Validation shared by flash_attention and paged_attention hooks: attribute resolution (heads
// from the shapes, scale, the two window forms, causal), the index tensors (int32 or int64), and
// the checks of their values (cumulative lengths, sequence lengths, block ids).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "src/ops/framework/arg_check.h"
#include "src/ops/framework/attention_layout.h"
#include "tileops/ops/declaration.h"
#include "tileops/ops/flash_attention.h"

namespace tileops::ops {

// Where an operator declares each attention attribute (indices into its attribute values).
// sliding_window is folded (declaration.h: folded_by_check) into the windows.
struct AttentionSlots {
  int num_heads, num_kv_heads, head_size, scale, causal, window_left, window_right, block_size,
      sliding_window;
};

// An attribute's index among every declared attribute value, the folded sliding_window
// included: what the hooks and attention_values hold (attribute_index counts the Problem's,
// which lack the folded ones).
consteval int declared_attribute_index(const OpDecl& op, std::string_view name) {
  int index = 0;
  for (const ArgDecl& a : op.arguments()) {
    if (is_tensor(a.kind)) continue;
    if (a.name == name) return index;
    ++index;
  }
  no_attribute_argument_of_that_name();
  return -1;
}

// The slots of an operator that declares every attention attribute under its usual name.
consteval AttentionSlots attention_slots(const OpDecl& op) {
  return {.num_heads = declared_attribute_index(op, "num_heads"),
          .num_kv_heads = declared_attribute_index(op, "num_kv_heads"),
          .head_size = declared_attribute_index(op, "head_size"),
          .scale = declared_attribute_index(op, "scale"),
          .causal = declared_attribute_index(op, "causal"),
          .window_left = declared_attribute_index(op, "window_left"),
          .window_right = declared_attribute_index(op, "window_right"),
          .block_size = declared_attribute_index(op, "block_size"),
          .sliding_window = declared_attribute_index(op, "sliding_window")};
}

// `attrs` as declared attribute values (sliding_window none: kFromCheck).
std::array<double, kAttrCount + 1> attention_values(const AttentionAttributes& attrs,
                                                    const AttentionSlots& slots);

// The declared attribute values read back; kFromCheck (Python's None) heads and head size are
// what the query's [.., H, D] and the key's dim `key_heads_dim` say.
AttentionAttributes declared_attention(std::span<const double> values, const AttentionSlots& slots,
                                       const Tensor& query, const Tensor& key,
                                       int key_heads_dim = -2);

// Checks num_heads/num_kv_heads/head_size against the query's [.., H, D] and each other and
// resolves scale and the windows (sliding_window w == (w-1, 0), both forms must agree; causal
// bounds the right window at 0) into the Problem's layout. block_size is left 0.
std::vector<double> resolve_attention_attributes(const ArgCheck& check,
                                                 const AttentionAttributes& attrs,
                                                 std::int64_t query_heads,
                                                 std::int64_t query_head_size);

// Writes the Problem's `layout` over the declared values, in order, skipping the folded slot
// (the framework drops it).
void store_layout(std::span<double> values, const std::vector<double>& layout,
                  const AttentionSlots& slots);

// `value` as a Problem attribute (a double): exact up to 2^53, refused above, naming `arg`.
double exact_attribute(const ArgCheck& check, std::int64_t value, std::string_view arg);

// An int32 or int64 tensor (kIndex) of exactly `shape` (any strides).
void check_index_tensor(const ArgCheck& check, const Tensor& t, std::string_view arg,
                        const Dims& shape, std::string_view why);

bool attention_present(const Tensor& t);

// cu_seqlens values: starts at 0, never decreases, ends at `total` (total < 0: any end).
void check_cumulative_lengths(const ArgCheck& check, const Tensor& cu, std::string_view arg,
                              std::int64_t total);

// Every block id that a sequence of `length` keys uses (its first ceil(length / block_size)
// entries of row b) is in [0, num_blocks).
void check_block_ids(const ArgCheck& check, const Tensor& block_table, std::int64_t b,
                     std::int64_t length, std::int64_t block_size, std::int64_t num_blocks,
                     std::string_view arg = "block_table");

}  // namespace tileops::ops
