// topk_topp_sampling's declaration (include/tileops/ops/declaration.h). Its scalar topk/topp
// reach the implementations as 1-element tensors (absent when off), and the seed as a tensor:
// its C++, C and Python forms stay hand-written (see top_k_top_p_sampler.decl.h).
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl topk_topp_sampling =
    hand_written_cpp(hand_written_c(hand_written_python(without_aliasing(
        declare("topk_topp_sampling", "TopkToppSampling",
                "One token per row of probs [B, V] (int32 or int64; topk <= 0 / topp >= 1: off).",
                {
                    input("probs", kStandardFloat).rank_is(2),
                    optional_input("topk", kIndex),
                    optional_input("topp", dtype_in({DataType::kFloat32, DataType::kFloat64})),
                    input("seed", dtype_in({DataType::kInt64})).rank_is(0),
                    output("out", dtype_in({DataType::kInt32, DataType::kInt64})),
                })))));

}  // namespace tileops::ops::decls
