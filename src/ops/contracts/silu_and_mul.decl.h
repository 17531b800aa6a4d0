// silu_and_mul's declaration (include/tileops/ops/declaration.h); dim and out's shape are
// checked in silu_and_mul.cc.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl silu_and_mul =
    declare("silu_and_mul", "SiluAndMul", "out = silu(x[..., :d]) * x[..., d:] along dim.",
            {
                input("input", kStandardFloat).rank_at_least(1),
                attribute("dim", ArgKind::kInt).defaults_to(-1),
                output("out", dtype_of(0)),
            });

}  // namespace tileops::ops::decls
