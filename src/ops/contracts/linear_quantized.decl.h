// linear_quantized's declaration (include/tileops/ops/declaration.h). N and K are read from
// qweight's header: the contract's hooks.
#pragma once

#include "tileops/ops/declaration.h"

namespace tileops::ops::decls {

inline constexpr OpDecl linear_quantized = with_detail(
    "qweight is quantize_weight's output; its header gives N and K (K must be input's last dim).",
    without_aliasing(
        declare("linear_quantized", "LinearQuantized",
                "out = input @ dequantize(qweight).T + bias, float32 accumulation, the weight "
                "dequantized in registers.",
                {
                    input("input", kStandardFloat).rank_at_least(1),
                    input("qweight", dtype_in({DataType::kUInt8})).rank_is(1),
                    optional_input("bias", kStandardFloat),
                    output("out", dtype_of(0, "same as 'input'")),
                })));

}  // namespace tileops::ops::decls
