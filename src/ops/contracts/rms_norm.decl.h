// rms_norm's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl rms_norm = declaration_only(declare(
    "rms_norm", "RmsNorm", "out = input / sqrt(mean(input^2) + eps) * weight (last dim).",
    {
        input("input", kStandardFloat).rank_at_least(1),
        input("weight", kStandardFloat)
            .rank_is(1)
            .shape_is(last_dim_of(0), "the last dim of input"),
        attribute("eps", ArgKind::kFloat).values(ValueRule::kFiniteNonNegative).defaults_to(1e-6),
        output("out", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
    }));

}  // namespace tileops::ops::decls
