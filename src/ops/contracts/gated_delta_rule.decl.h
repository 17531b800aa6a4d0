// gated_delta_rule's declaration (include/tileops/ops/declaration.h): flash-linear-attention's
// fused_recurrent_gated_delta_rule and chunk_gated_delta_rule (one contract; chunk_size picks the
// form). The shapes relating q/k/v/g/beta, the state and cu_seqlens are checked by the hooks.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl gated_delta_rule = with_detail(
    "q, k: [B, T, H, K]; v: [B, T, HV, V] with HV a multiple of H (GVA); g (log-space decay) and "
    "beta: [B, T, HV]; initial_state, final_state: float32 [N, HV, K, V], N = B, or the number "
    "of sequences of cu_seqlens [N + 1] (then B = 1). Per token: S *= exp(g); S += k (beta (v - "
    "S^T k))^T; o = scale S^T q. scale: None or 0 means K^-0.5. chunk_size 0: the per-token "
    "recurrence; 64: the chunked (WY) form, the same result up to float32 rounding. Without "
    "initial_state the state starts at zero.",
    declare("gated_delta_rule", "GatedDeltaRule",
            "Gated delta rule linear attention (Qwen3-Next's Gated DeltaNet): fla's "
            "fused_recurrent_gated_delta_rule / chunk_gated_delta_rule with a float32 state.",
            {
                input("q", kStandardFloat).rank_is(4),
                input("k", dtype_of(0, "same as 'q'")).shape_is(same_shape_as(0), "same as 'q'"),
                input("v", dtype_of(0, "same as 'q'")).rank_is(4),
                input("g", kStandardFloat).rank_is(3),
                input("beta", kStandardFloat).rank_is(3),
                attribute("scale", ArgKind::kFloat).none_means(0.0),  // None or 0: K^-0.5
                optional_input("initial_state", dtype_in({DataType::kFloat32})).rank_is(4),
                optional_input("cu_seqlens", kIndex).rank_is(1),
                attribute("use_qk_l2norm_in_kernel", ArgKind::kBool).defaults_to(0),
                attribute("chunk_size", ArgKind::kInt).defaults_to(0),
                output("o", dtype_of(2, "same as 'v'")).shape_is(same_shape_as(2), "same as 'v'"),
                output("final_state", dtype_in({DataType::kFloat32})).rank_is(4),
            }));

}  // namespace tileops::ops::decls
