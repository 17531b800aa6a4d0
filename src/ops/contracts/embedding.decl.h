// embedding's declaration (include/tileops/ops/declaration.h); input_ids' rank and out's shape
// are checked in embedding.cc, the ids' values by the implementations.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl embedding = with_detail(
    "An id outside [0, rows of weight) fails.",
    without_aliasing(declare("embedding", "Embedding", "out[i..., :] = weight[input_ids[i...], :].",
                             {
                                 input("input_ids", kIndex),
                                 input("weight").rank_is(2),
                                 output("out", dtype_of(1)),
                             })));

}  // namespace tileops::ops::decls
