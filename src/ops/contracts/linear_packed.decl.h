// linear_packed's declaration (include/tileops/ops/declaration.h). Python takes the
// PackedLinearWeight, whose [N, K] shapes the output: hand-written.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl linear_packed =
    with_detail("N is taken from out's last dim.",
                hand_written_python(without_aliasing(declare(
                    "linear_packed", "LinearPacked",
                    "out = input @ weight.T + bias with the weight as pack_linear_weight(weight).",
                    {
                        input("input", kStandardFloat).rank_at_least(1),
                        input("packed"),  // pack_linear_weight's form: the contract's hook
                        optional_input("bias", kStandardFloat),
                        output("out", dtype_of(0, "same as 'input'")),
                    }))));

}  // namespace tileops::ops::decls
