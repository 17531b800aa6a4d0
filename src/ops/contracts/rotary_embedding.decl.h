// rotary_embedding's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl rotary_embedding = with_detail(
    "query, key: [*positions.shape, H*head_size] or [*positions.shape, H, head_size]. key may "
    "be NULL (no key); rotary_dim <= 0 means cos_sin_cache's shape[1]; NULL query_out/key_out: "
    "in place.",
    declare(
        "rotary_embedding", "RotaryEmbedding",
        "vLLM rotary embedding, positions [T] or [batch, seq] (any rank >= 1); in place into "
        "query/key when the outputs are omitted. Returns (query_out or query, key_out or key).",
        {
            input("positions", kIndex).rank_at_least(1),
            input("query", kStandardFloat),
            optional_input("key", dtype_of(1)),
            attribute("head_size", ArgKind::kInt64),
            input("cos_sin_cache", kStandardFloat).rank_is(2),
            attribute("is_neox_style", ArgKind::kBool).defaults_to(1),
            // <= 0: cos_sin_cache's shape[1] (the hook writes the width the implementations read).
            attribute("rotary_dim", ArgKind::kInt64).none_means(0),
            optional_output("query_out", 1, dtype_of(1))
                .shape_is(same_shape_as(1), "same as query"),
            optional_output("key_out", 2, dtype_of(2)).shape_is(same_shape_as(2), "same as key"),
        }));

}  // namespace tileops::ops::decls
