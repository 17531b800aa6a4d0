// scaled_softmax's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl scaled_softmax = declaration_only(
    declare("scaled_softmax", "ScaledSoftmax", "out = softmax(scale * input) over the last dim.",
            {
                input("input", kStandardFloat).rank_at_least(1),
                attribute("scale", ArgKind::kFloat).values(ValueRule::kFiniteFloat32),
                output("out", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
            }));

}  // namespace tileops::ops::decls
