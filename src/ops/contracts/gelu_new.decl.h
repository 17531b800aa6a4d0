// gelu_new's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl gelu_new = declaration_only(
    declare("gelu_new", "GeluNew", "out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).",
            {
                input("input", kStandardFloat),
                output("out", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
            }));

}  // namespace tileops::ops::decls
