// cast's declaration (include/tileops/ops/declaration.h): every dtype pair is valid; out's shape
// is checked in cast.cc. Python's keyword-only `dtype` and `input_dtype` (8-bit floats over
// uint8 storage) keep its binding hand-written.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl cast =
    hand_written_python(declare("cast", "Cast", "out = input converted to out's dtype.",
                                {
                                    input("input"),
                                    output("out"),
                                }));

}  // namespace tileops::ops::decls
