// linear's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl linear = with_detail(
    "bias [N] or NULL.",
    without_aliasing(
        declare("linear", "Linear", "out = input @ weight.T + bias (weight [N, K]).",
                {
                    input("input", kStandardFloat).rank_at_least(1),
                    input("weight", dtype_of(0, "same as 'input'")).rank_is(2),
                    optional_input("bias", kStandardFloat),
                    output("out", dtype_of(0, "same as 'input'")),  // [..., N]: the contract's hook
                })));

}  // namespace tileops::ops::decls
