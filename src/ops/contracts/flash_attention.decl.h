// flash_attention's declaration (include/tileops/ops/declaration.h). The attributes are
// AttentionAttributes in the order the implementations read them (attention_layout.h); the C
// entry takes them as a struct, so it stays hand-written.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

// The index tensors (cumulative lengths, block tables); their shapes are checked by the hook.
// int32 or int64, each on its own: torch.cumsum gives int64 lengths, block tables are int32.
inline constexpr DtypeRule kAttentionIndex = kIndex;
// The wording of the hand-written checks these replace.
inline constexpr std::string_view kSameAsQuery = "same as 'query'";

inline constexpr OpDecl flash_attention = hand_written_cpp(hand_written_c(without_aliasing(declare(
    "flash_attention", "FlashAttention",
    "Varlen prefill attention (packed or paged KV, GQA, causal, sliding window).",
    {
        input("query", kStandardFloat).rank_is(3),
        // key and value: packed [Tkv, Hkv, D] or paged caches; the hook checks which.
        input("key", dtype_of(0, kSameAsQuery)),
        input("value", dtype_of(0, kSameAsQuery)),
        optional_input("cu_seqlens_q", kAttentionIndex).rank_is(1),
        optional_input("cu_seqlens_kv", kAttentionIndex).rank_is(1),
        optional_input("block_table", kAttentionIndex).rank_is(2),
        attribute("num_heads", ArgKind::kInt64).none_means(kFromCheck),     // None: query.size(-2)
        attribute("num_kv_heads", ArgKind::kInt64).none_means(kFromCheck),  // key.size(-2)
        attribute("head_size", ArgKind::kInt64).none_means(kFromCheck),     // query.size(-1)
        attribute("scale", ArgKind::kFloat).defaults_to(0.0),
        attribute("causal", ArgKind::kBool).defaults_to(0),
        attribute("window_left", ArgKind::kInt64).defaults_to(-1),
        attribute("window_right", ArgKind::kInt64).defaults_to(-1),
        attribute("block_size", ArgKind::kInt64).defaults_to(0),
        attribute("sliding_window", ArgKind::kInt64).none_means(kFromCheck).folded_by_check(),
        output("output", dtype_of(0, kSameAsQuery))
            .shape_is(same_shape_as(0), "same as 'query' [Tq, H, D]"),
        // flash_attn_varlen_func's softmax_lse: [num_heads, Tq] float32; the hook checks the shape.
        requested_output("softmax_lse", dtype_in({DataType::kFloat32})),
    }))));

}  // namespace tileops::ops::decls
