// swiglu's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl swiglu = declaration_only(
    declare("swiglu", "Swiglu", "out = input * silu(gate).",
            {
                input("input", kStandardFloat),
                input("gate", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
                output("out", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
            }));

}  // namespace tileops::ops::decls
