// float8 (e4m3fn, e5m2) runs decoded to float32 in registers: the packing and panel loads of
// scaled_mm (src/ops/cpu/gemm/scaled_mm.cc).
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// dst[i] = scale · decode(src[i·stride]) for i < n; kind is float8_e4m3fn or float8_e5m2. Exact
// decoding (subnormals, e4m3fn's NaN, e5m2's infinities and NaNs) on every target; stride 1 runs
// in vectors.
void fp8_to_f32(const std::uint8_t* src, std::int64_t stride, std::int64_t n, DataType kind,
                float scale, float* dst);

// dst[i] = the bfloat16 bits of decode(src[i·stride]) for i < n: exact, as every float8 value
// is a bfloat16 value (the packed bfloat16 products of scaled_mm).
void fp8_to_bf16(const std::uint8_t* src, std::int64_t stride, std::int64_t n, DataType kind,
                 std::uint16_t* dst);

}  // namespace tileops::ops::cpu
