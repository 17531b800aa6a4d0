// fatrelu_and_mul's declaration (include/tileops/ops/declaration.h); dim and out's shape are
// checked in gated_activations.cc.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl fatrelu_and_mul = declare(
    "fatrelu_and_mul", "FatreluAndMul",
    "out = where(x[..., :d] > threshold, x[..., :d], 0) * x[..., d:] along dim.",
    {
        input("input", kStandardFloat).rank_at_least(1),
        attribute("threshold", ArgKind::kFloat).values(ValueRule::kFiniteFloat32).defaults_to(0.0),
        attribute("dim", ArgKind::kInt).defaults_to(-1),
        output("out", dtype_of(0)),
    });

}  // namespace tileops::ops::decls
