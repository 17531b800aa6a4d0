// The C types of values in generated code, and the expressions rounding or wrapping a computed
// value to its dtype (codegen_types.cc). Shared by the planning passes and the printer.
#pragma once

#include <cstdint>
#include <string>

#include "tileops/tl/ir.h"

namespace tileops::tl::cpu {

// The C type a value of `dtype` computes in, and the one its global memory holds.
const char* compute_type(DataType dtype);
const char* memory_type(DataType dtype);
// The bytes of one element of compute_type(dtype).
std::int64_t compute_bytes(DataType dtype);
// C expression rounding a float-typed (float, or double for float64) expression to `dtype`, and
// one rounding a double-typed expression.
std::string round_float(DataType dtype, const std::string& x);
std::string round_double(DataType dtype, const std::string& x);
// `v` without an outer rounding (round_float) to 16-bit dtype `d`; `v` itself when it has none.
std::string strip_round(DataType d, const std::string& v);
// C expression wrapping an i64-typed expression to an integer or bool dtype.
std::string wrap_int(DataType dtype, const std::string& x);

}  // namespace tileops::tl::cpu
