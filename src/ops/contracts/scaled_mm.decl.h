// scaled_mm's declaration (include/tileops/ops/declaration.h): vLLM's cutlass_scaled_mm. The
// scales' two forms (per tensor/token/channel, or 128×128 blocks), the bias's dtype (out's) and
// the K and N relations are the contract's hooks (scaled_mm.cc).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl scaled_mm = with_detail(
    "a: [M, K], b: [K, N] (vLLM passes weight.t() of an [N, K] weight), both float8_e4m3fn or "
    "both float8_e5m2. scale_a/scale_b: float32, either per tensor/token/channel, contiguous "
    "(scale_a numel 1 or M, scale_b numel 1 or N; applied as an epilogue) or 128x128 blocks "
    "(scale_a [M, ceil(K/128)], scale_b [ceil(K/128), ceil(N/128)]; applied per K block). bias: "
    "[N] in out's dtype. out: [M, N].",
    with_derived_attributes(
        1,
        hand_written_python(without_aliasing(declare(
            "scaled_mm", "ScaledMm",
            "out = (scale_a * a) @ (scale_b * b) + bias with float32 accumulation, a and b "
            "float8 (vLLM's cutlass_scaled_mm).",
            {
                input("a", dtype_in({DataType::kFloat8E4M3FN, DataType::kFloat8E5M2})).rank_is(2),
                input("b", dtype_of(0,
                                    "same as 'a' (both float8_e4m3fn or both "
                                    "float8_e5m2)"))
                    .rank_is(2),
                input("scale_a", dtype_in({DataType::kFloat32})),
                input("scale_b", dtype_in({DataType::kFloat32})),
                optional_input("bias", kStandardFloat).rank_is(1),
                output("out", kStandardFloat).rank_is(2),
            })))));

}  // namespace tileops::ops::decls
