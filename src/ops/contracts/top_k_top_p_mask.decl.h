// top_k_top_p_mask's declaration (include/tileops/ops/declaration.h); k's and p's shapes and
// values are checked in top_k_top_p_mask.cc.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl top_k_top_p_mask = with_detail(
    "k: int32/int64 [B] (or 1 element) in [1, V], V: no top-k mask; p: float32/float64 [B] (or 1 "
    "element) in (0, 1], 1: no top-p mask; none: that mask is off. Ties at the k-th value are "
    "kept; the nucleus keeps a token while the mass before it (heavier tokens, then equal ones "
    "of higher index) is below p.",
    declare("top_k_top_p_mask", "TopKTopPMask",
            "Sets the logits [B, V] outside the top k, then outside the top-p nucleus of the "
            "softmax of what is left, to -inf, in place (vLLM's apply_top_k_top_p).",
            {
                in_out("logits", kStandardFloat).rank_is(2),
                optional_input("k", kIndex),
                optional_input("p", dtype_in({DataType::kFloat32, DataType::kFloat64})),
            }));

}  // namespace tileops::ops::decls
