// gelu_quick's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl gelu_quick = declaration_only(
    declare("gelu_quick", "GeluQuick", "out = x * sigmoid(1.702 x).",
            {
                input("input", kStandardFloat),
                output("out", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
            }));

}  // namespace tileops::ops::decls
