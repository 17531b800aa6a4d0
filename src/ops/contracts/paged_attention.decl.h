// paged_attention's declaration (include/tileops/ops/declaration.h), in the C entry's order.
// Hand-written bindings: C takes the attributes as a struct, Python (vLLM's argument list) has
// no causal or window_right.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl paged_attention =
    hand_written_cpp(hand_written_python(hand_written_c(without_aliasing(declare(
        "paged_attention", "PagedAttention", "Decode attention over a paged KV cache.",
        {
            input("query", kStandardFloat).rank_is(3),
            input("key_cache", dtype_of(0)).rank_is(4),
            input("value_cache", dtype_of(0)),
            input("seq_lens"),
            input("block_table"),
            attribute("num_heads", ArgKind::kInt64).none_means(kFromCheck),
            attribute("num_kv_heads", ArgKind::kInt64).none_means(kFromCheck),
            attribute("head_size", ArgKind::kInt64).none_means(kFromCheck),
            attribute("scale", ArgKind::kFloat).defaults_to(0.0),
            attribute("causal", ArgKind::kBool).defaults_to(0),
            attribute("window_left", ArgKind::kInt64).defaults_to(-1),
            attribute("window_right", ArgKind::kInt64).defaults_to(-1),
            attribute("block_size", ArgKind::kInt64).defaults_to(0),
            attribute("sliding_window", ArgKind::kInt64).none_means(kFromCheck).folded_by_check(),
            output("output", dtype_of(0)).shape_is(same_shape_as(0), "same as 'query' [B, H, D]"),
            optional_input("seq_lens_host"),
            optional_input("block_table_host"),
        })))));

}  // namespace tileops::ops::decls
