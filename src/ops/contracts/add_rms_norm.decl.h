// add_rms_norm's declaration (include/tileops/ops/declaration.h). Omitted outputs are written
// in place (into input and residual). The C entry takes both outputs or neither, and Python names
// an output omitted alone after itself, so both bindings stay hand-written.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl add_rms_norm = hand_written_c(hand_written_python(declare(
    "add_rms_norm", "AddRmsNorm",
    "residual_out = input + residual; out = rms_norm(residual_out). Omitted outputs are written "
    "into input / residual. Returns (out, residual_out).",
    {
        input("input", kStandardFloat).rank_at_least(1),
        input("residual", dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
        input("weight", kStandardFloat)
            .rank_is(1)
            .shape_is(last_dim_of(0), "the last dim of input"),
        attribute("eps", ArgKind::kFloat).values(ValueRule::kFiniteNonNegative).defaults_to(1e-6),
        optional_output("out", 0, dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
        optional_output("residual_out", 1, dtype_of(0)).shape_is(same_shape_as(0), "same as input"),
    })));

}  // namespace tileops::ops::decls
