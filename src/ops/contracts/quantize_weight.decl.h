// quantize_weight's declaration (include/tileops/ops/declaration.h). qweight's size comes from
// the attributes and the weight's shape: the contract's hooks.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl quantize_weight = with_detail(
    "qweight: rank 1, contiguous uint8, quantized_weight_bytes(N, K, bits, group_size, "
    "symmetric) bytes. bits 8: group_size 0 (per channel), 32, 64 or 128, symmetric; bits 4: "
    "group_size 32, 64 or 128, symmetric or with zero points. K must be a multiple of a "
    "nonzero group_size.",
    without_aliasing(declare(
        "quantize_weight", "QuantizeWeight",
        "Weight-only quantization of a [N, K] linear weight (int8 or int4, group-wise scales) "
        "into the layout linear_quantized streams.",
        {
            input("weight", kStandardFloat).rank_is(2),
            attribute("bits", ArgKind::kInt).defaults_to(8),
            attribute("group_size", ArgKind::kInt).defaults_to(0),
            attribute("symmetric", ArgKind::kBool).defaults_to(1),
            output("qweight", dtype_in({DataType::kUInt8})),  // 1-D: the contract's hooks
        })));

}  // namespace tileops::ops::decls
