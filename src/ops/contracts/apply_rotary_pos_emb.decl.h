// apply_rotary_pos_emb's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

// Derived: the rotated width and whether the tables are per element (from cos's shape).
inline constexpr OpDecl apply_rotary_pos_emb = with_detail(
    "NULL query_out/key_out: in place.",
    with_derived_attributes(
        2,
        declare("apply_rotary_pos_emb", "ApplyRotaryPosEmb",
                "Rotary embedding with cos/sin gathered per token ([T, rot/2], or [T, head_size] "
                "per element); in place when the outputs are omitted. Returns (query, key).",
                {
                    input("query", kStandardFloat),
                    optional_input("key", dtype_of(0)),
                    input("cos", kStandardFloat).rank_is(2),
                    input("sin", kStandardFloat).shape_is(same_shape_as(2), "same as cos"),
                    attribute("head_size", ArgKind::kInt64),
                    attribute("is_neox_style", ArgKind::kBool).defaults_to(1),
                    optional_output("query_out", 0, dtype_of(0))
                        .shape_is(same_shape_as(0), "same as query"),
                    optional_output("key_out", 1, dtype_of(1))
                        .shape_is(same_shape_as(1), "same as key"),
                })));

}  // namespace tileops::ops::decls
