// matmul's declaration (include/tileops/ops/declaration.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl matmul = without_aliasing(declare(
    "matmul", "Matmul", "c = op(a) @ op(b), batch dims broadcast.",
    {
        input("a", kStandardFloat).rank_at_least(2),
        input("b", dtype_of(0, "same as 'a'")).rank_at_least(2),
        output("c", dtype_of(0, "same as 'a'")),  // [broadcast batch..., M, N]: the contract's hook
        attribute("trans_a", ArgKind::kBool).defaults_to(0),
        attribute("trans_b", ArgKind::kBool).defaults_to(0),
    }));

}  // namespace tileops::ops::decls
