// top_k_top_p_sampler's declaration (include/tileops/ops/declaration.h). Its C++, C and Python
// forms stay hand-written: the seed is a uint64 (given as a rank-0 int64 tensor, so that a new seed
// reuses the cached instance), and Python's k/p are None, a number or a tensor, with a
// torch.Generator.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl top_k_top_p_sampler =
    hand_written_cpp(hand_written_c(hand_written_python(without_aliasing(
        declare("top_k_top_p_sampler", "TopKTopPSampler",
                "One token per row of logits [B, V] (int64 or int32) from softmax restricted to "
                "the top k and the top-p nucleus.",
                {
                    input("logits", kStandardFloat).rank_is(2),
                    optional_input("k", kIndex),
                    optional_input("p", dtype_in({DataType::kFloat32, DataType::kFloat64})),
                    input("seed", dtype_in({DataType::kInt64})).rank_is(0),
                    output("out", dtype_in({DataType::kInt64, DataType::kInt32})),
                })))));

}  // namespace tileops::ops::decls
