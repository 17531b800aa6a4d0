// paged_attention's declaration (include/tileops/ops/declaration.h), in the order of its Python
// form (vLLM's list, without causal and window_right). The C entry and the C++ API take the
// attributes as a struct, so they stay hand-written.
#pragma once

#include "src/ops/contracts/flash_attention.decl.h"
#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl paged_attention = hand_written_cpp(hand_written_c(without_aliasing(declare(
    "paged_attention", "PagedAttention", "Decode attention over a paged KV cache.",
    {
        input("query", kStandardFloat).rank_is(3),
        // Each cache [num_blocks, block_size, Hkv, D] or with D split in two, [.., D / x, x]
        // (vLLM's key cache permuted into this order), of the query's dtype or an 8-bit float
        // one (vLLM's fp8 caches, dequantised with k_scale/v_scale): the hook checks.
        input("key_cache").rank_at_least(4),
        input("value_cache").rank_at_least(4),
        // seq_lens [B] and block_table [B, max_blocks]: the hook checks the shapes.
        input("seq_lens", kAttentionIndex).rank_is(1),
        input("block_table", kAttentionIndex).rank_is(2),
        attribute("num_heads", ArgKind::kInt64).none_means(kFromCheck),     // query.size(-2)
        attribute("num_kv_heads", ArgKind::kInt64).none_means(kFromCheck),  // key_cache Hkv
        attribute("head_size", ArgKind::kInt64).none_means(kFromCheck),     // query.size(-1)
        attribute("scale", ArgKind::kFloat).defaults_to(0.0),
        attribute("causal", ArgKind::kBool).defaults_to(0).not_in_python(),
        attribute("block_size", ArgKind::kInt64).defaults_to(0),
        output("output", dtype_of(0, kSameAsQuery))
            .shape_is(same_shape_as(0), "same as 'query' [B, H, D]"),
        optional_input("seq_lens_host", kAttentionIndex).rank_is(1),
        optional_input("block_table_host", kAttentionIndex).rank_is(2),
        attribute("sliding_window", ArgKind::kInt64).none_means(kFromCheck).folded_by_check(),
        attribute("window_left", ArgKind::kInt64).defaults_to(-1),
        attribute("window_right", ArgKind::kInt64).defaults_to(-1).not_in_python(),
        // ALiBi: slope_h * (key position - (seq_len - 1)) added to head h's scores (vLLM).
        optional_input("alibi_slopes", dtype_in({DataType::kFloat32})).rank_is(1),
        // fp8 caches hold x / scale: keys and values are read as fp8 * scale (one element each).
        optional_input("k_scale", dtype_in({DataType::kFloat32})),
        optional_input("v_scale", dtype_in({DataType::kFloat32})),
    }))));

}  // namespace tileops::ops::decls
