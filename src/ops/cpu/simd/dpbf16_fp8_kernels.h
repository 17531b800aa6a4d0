// scaled_mm's streaming (decode) product on VDPBF16PS (AVX512-BF16 with AVX512-BW): every
// float8 value (e4m3fn, e5m2: subnormals, infinities and NaN included) is a bfloat16 value, so
// a vector of 32 codes becomes 32 bfloat16 weights by table lookup, two VPERMI2W of 64 entries
// over the magnitude and the sign or-ed in (7 instructions, where decoding to float32 takes
// about 13 per 16 codes), and each VDPBF16PS does 32 multiply-adds. x is a's rows as bfloat16
// (exact: a is float8 too). Used only where dpbf16_enabled() says so.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// x's row stride for k elements: k rounded up to a multiple of 32 (the kernel reads x in runs of
// 32, which must be zero past k).
std::int64_t dpbf16_fp8_ld_x(std::int64_t k);

// out[i·ld_out + j] = Σ_{p < k} x[i·ld_x + p] · w(j, p) for i < m (any m; 4 rows of x per pass
// over the codes), j < n: x bfloat16 bits, w(j, p) the float8 code w[j·ld_w + p] of `kind`
// (float8_e4m3fn or float8_e5m2); codes past k are not read. The sums are float32 (VDPBF16PS:
// a subnormal sum is flushed to zero).
void dpbf16_fp8_dot_rows(const std::uint16_t* x, std::int64_t ld_x, std::int64_t m,
                         const std::uint8_t* w, std::int64_t ld_w, DataType kind, std::int64_t n,
                         std::int64_t k, float* out, std::int64_t ld_out);

// out[p] = the bfloat16 bits of code[p] of `kind` for p < n (exact), by the same lookup: the
// panels that more rows of x multiply with dpbf16_dot_rows, decoded once instead of per 4 rows.
void dpbf16_fp8_to_bf16(const std::uint8_t* codes, std::int64_t n, DataType kind,
                        std::uint16_t* out);

}  // namespace tileops::ops::cpu
