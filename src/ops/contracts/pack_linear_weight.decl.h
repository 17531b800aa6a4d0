// pack_linear_weight's declaration (include/tileops/ops/declaration.h). Python returns a
// PackedLinearWeight (the tensor and its [N, K]) and names `packed` `out`; C++ has no class
// form: both hand-written.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl pack_linear_weight = with_detail(
    "packed: rank 1, contiguous, packed_linear_weight_numel(N, K, dtype) elements of the weight's "
    "dtype.",
    hand_written_cpp(hand_written_python(without_aliasing(declare(
        "pack_linear_weight", "PackLinearWeight",
        "The packed form of a [N, K] linear weight, which linear streams faster for up to 16 rows.",
        {
            input("weight", kStandardFloat).rank_is(2),
            output("packed"),  // 1-D, packed_linear_weight_numel elements: the contract's hook
        })))));

}  // namespace tileops::ops::decls
