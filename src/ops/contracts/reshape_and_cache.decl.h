// reshape_and_cache's declaration (include/tileops/ops/declaration.h). Its combined-cache form
// (one kv_cache) is a hand-written overload over the same contract.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl reshape_and_cache = with_detail(
    "slot_mapping: int32/int64 [T]. A float8_e4m3fn/float8_e5m2 cache of float32/float16/bfloat16 "
    "rows stores fp8(x / scale), saturating (k_scale/v_scale: float32, one element; none: 1).",
    without_aliasing(declare(
        "reshape_and_cache", "ReshapeAndCache",
        "key/value [T, Hkv, D] into key_cache/value_cache [num_blocks, block_size, Hkv, D] at "
        "slot_mapping (-1 skips).",
        {
            input("key").rank_is(3),
            input("value").rank_is(3),
            // Either cache may split D in two, [.., Hkv, D / x, x] (vLLM's key cache permuted).
            // Each cache has its rows' dtype, or an 8-bit float one (vLLM's fp8 caches): the
            // hook checks.
            in_out("key_cache").rank_at_least(4),
            in_out("value_cache").rank_at_least(4),
            input("slot_mapping", kIndex).rank_is(1),
            optional_input("k_scale", dtype_in({DataType::kFloat32})),
            optional_input("v_scale", dtype_in({DataType::kFloat32})),
        })));

}  // namespace tileops::ops::decls
