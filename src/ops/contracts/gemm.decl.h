// gemm's declaration (include/tileops/ops/declaration.h). Python's c may be omitted only when
// beta == 0, and the class form keeps beta for that: its binding stays hand-written.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl gemm = hand_written_python(without_aliasing(declare(
    "gemm", "Gemm",
    "c = alpha * op(a) * op(b) + beta * c, op = transpose when trans_* != 0; 2-D or batched 3-D.",
    {
        input("a", kStandardFloat),
        input("b", dtype_of(0, "same as 'a'")),
        attribute("alpha", ArgKind::kFloat).defaults_to(1.0),
        attribute("beta", ArgKind::kFloat).defaults_to(0.0),
        attribute("trans_a", ArgKind::kBool).defaults_to(0),
        attribute("trans_b", ArgKind::kBool).defaults_to(0),
        in_out("c", dtype_of(0, "same as 'a'")),
    })));

}  // namespace tileops::ops::decls
