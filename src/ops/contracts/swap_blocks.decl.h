// swap_blocks' declaration (include/tileops/ops/declaration.h); the block shapes and the
// mapping's values are checked in block_copies.cc.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl swap_blocks = with_detail(
    "Blocks are the entries of dim 0; block_mapping: int32/int64 [n, 2] rows (src block, dst "
    "block), copied in row order.",
    without_aliasing(declare(
        "swap_blocks", "SwapBlocks",
        "dst[block_mapping[i, 1]] = src[block_mapping[i, 0]] for every row i (vLLM's cache swap).",
        {
            input("src").rank_at_least(1),
            in_out("dst", dtype_of(0)).rank_at_least(1),
            input("block_mapping", kIndex).rank_is(2),
        })));

}  // namespace tileops::ops::decls
