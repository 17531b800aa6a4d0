// Scalar conversions for the 8-bit float formats (bit patterns held in uint8_t).
//
// float8_e4m3fn: bias 7, no infinities, NaN = S.1111.111, max 448.
// float8_e5m2:   bias 15, IEEE-like (infinities, NaNs), max 57344.
// hifloat8:      HiF8 (arXiv 2409.16626): sign, prefix-coded dot field, sign-magnitude
//                exponent with an implicit leading magnitude bit, mantissa; see docs/dtypes.md.
//
// Encoding from float/double rounds to nearest, ties to even (HiF8: ties away from zero, the
// format's own rounding). `Overflow` chooses what happens to finite values beyond the largest
// finite value after rounding.
#pragma once

#include <cstdint>

namespace tileops {

enum class Overflow {
  kSaturate,  // clamp to ±max finite (infinities too)
  kInfinity,  // ±Inf where the format has it, else NaN
};

float float8_e4m3fn_to_float(std::uint8_t bits);
float float8_e5m2_to_float(std::uint8_t bits);
float hifloat8_to_float(std::uint8_t bits);

// Defaults follow SPEC_OPS `cast`: e4m3fn saturates (it has no infinity), e5m2 and HiF8 keep
// infinities (IEEE-like).
std::uint8_t double_to_float8_e4m3fn(double value, Overflow overflow = Overflow::kSaturate);
std::uint8_t double_to_float8_e5m2(double value, Overflow overflow = Overflow::kInfinity);
std::uint8_t double_to_hifloat8(double value, Overflow overflow = Overflow::kInfinity);

// HiF8 value-grid emulation (CATALOG.md `to_hif8`): rounds a float onto the HiF8 grid,
// returning float. `saturate` selects ±FLT_MAX instead of ±Inf for |x| >= 40960.
float to_hif8(float value, bool saturate);

}  // namespace tileops
