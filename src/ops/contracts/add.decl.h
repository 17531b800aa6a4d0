// add's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl add = declaration_only(declare(
    "add", "Add", "out = input + other (NumPy broadcasting).",
    {
        input("input", kArithmetic),
        input("other", dtype_of(0)),
        output("out", dtype_of(0)).shape_is(broadcast_of(0, 1), "input and other broadcast"),
    }));

}  // namespace tileops::ops::decls
