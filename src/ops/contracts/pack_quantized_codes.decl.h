// pack_quantized_codes's declaration (include/tileops/ops/declaration.h): codes quantized
// elsewhere (GPTQ/AWQ/compressed-tensors checkpoints) into quantize_weight's layout. The shapes
// of scales, zeros and qweight come from the attributes: the contract's hooks.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl pack_quantized_codes = with_detail(
    "codes: [N, K]; bits 4: uint8 codes 0..15, bits 8: int8 codes. scales (and zeros, when "
    "given): [N, K / group_size] (group_size 0: [N, 1]), finite. The dequantized weight is "
    "scales * (codes - zeros), with zeros 8 (bits 4) or 0 (bits 8) when omitted. qweight: "
    "rank 1, contiguous uint8, quantized_weight_bytes(N, K, bits, group_size, zeros omitted) "
    "bytes.",
    without_aliasing(declare(
        "pack_quantized_codes", "PackQuantizedCodes",
        "Writes already-quantized codes with their scales (and zero points) into the layout "
        "linear_quantized streams.",
        {
            input("codes", dtype_in({DataType::kUInt8, DataType::kInt8})).rank_is(2),
            input("scales", kStandardFloat).rank_is(2), optional_input("zeros", kStandardFloat),
            attribute("bits", ArgKind::kInt).defaults_to(4),
            attribute("group_size", ArgKind::kInt).defaults_to(32),
            output("qweight", dtype_in({DataType::kUInt8})),  // 1-D: the contract's hooks
        })));

}  // namespace tileops::ops::decls
