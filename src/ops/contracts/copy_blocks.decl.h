// copy_blocks' declaration (include/tileops/ops/declaration.h); the mapping's shape and values
// are checked in block_copies.cc.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl copy_blocks = with_detail(
    "Blocks are the entries of dim 0; block_mapping: int32/int64 [n, 2] rows (src block, dst "
    "block), copied in row order. vLLM's form over lists of key and value caches is this "
    "operator once per cache (tileops.vllm).",
    declare("copy_blocks", "CopyBlocks",
            "cache[block_mapping[i, 1]] = cache[block_mapping[i, 0]] for every row i.",
            {
                in_out("cache").rank_at_least(1),
                input("block_mapping", kIndex).rank_is(2),
            }));

}  // namespace tileops::ops::decls
