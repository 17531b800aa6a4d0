// reshape_and_cache's declaration (include/tileops/ops/declaration.h). Its combined-cache form
// (one kv_cache) is a hand-written overload over the same contract.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl reshape_and_cache = with_detail(
    "slot_mapping: int32/int64 [T].",
    without_aliasing(declare(
        "reshape_and_cache", "ReshapeAndCache",
        "key/value [T, Hkv, D] into key_cache/value_cache [num_blocks, block_size, Hkv, D] at "
        "slot_mapping (-1 skips).",
        {
            input("key").rank_is(3),
            input("value").rank_is(3),
            // Either cache may split D in two, [.., Hkv, D / x, x] (vLLM's key cache permuted).
            in_out("key_cache", dtype_of(0)).rank_at_least(4),
            in_out("value_cache", dtype_of(1)).rank_at_least(4),
            input("slot_mapping", kIndex).rank_is(1),
        })));

}  // namespace tileops::ops::decls
