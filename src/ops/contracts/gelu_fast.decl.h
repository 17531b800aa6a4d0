// gelu_fast's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl gelu_fast = declaration_only(
    declare("gelu_fast", "GeluFast", "out = 0.5 x (1 + tanh(0.7978845608 x (1 + 0.044715 x^2))).",
            {
                input("input", kStandardFloat),
                output("out", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
            }));

}  // namespace tileops::ops::decls
