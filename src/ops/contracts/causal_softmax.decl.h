// causal_softmax's declaration (include/tileops/ops/declaration.h); input's rank and T >= S,
// then out's shape, are checked in causal_softmax.cc.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl causal_softmax = with_detail(
    "Input [S, T] or [B, S, T]: row i sees columns <= T - S + i.",
    declare("causal_softmax", "CausalSoftmax", "Softmax over the last dim with a causal mask.",
            {
                input("input", kStandardFloat),
                output("out", dtype_of(0)),
            }));

}  // namespace tileops::ops::decls
