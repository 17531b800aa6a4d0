// gelu_tanh_and_mul's declaration (include/tileops/ops/declaration.h); dim and out's shape are
// checked in gated_activations.cc.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl gelu_tanh_and_mul = declare(
    "gelu_tanh_and_mul", "GeluTanhAndMul", "out = gelu_tanh(x[..., :d]) * x[..., d:] along dim.",
    {
        input("input", kStandardFloat).rank_at_least(1),
        attribute("dim", ArgKind::kInt).defaults_to(-1),
        output("out", dtype_of(0)),
    });

}  // namespace tileops::ops::decls
