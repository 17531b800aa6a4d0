// Reading and writing one element of any DataType as a double or int64. Used by the cast
// operator's generic path, by references in tests and by the C API; not by hot loops.
#pragma once

#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops {

// Exact for every dtype except int64 beyond 2^53 (use read_int64 for integers).
double read_as_double(const void* element, DataType dtype);
std::int64_t read_as_int64(const void* element, DataType dtype);  // integral and bool only

// Writes `value` rounded to nearest-even for float targets (HiF8 ties away; e4m3fn saturating);
// for integer targets truncates toward zero and saturates to the type's range, NaN -> 0;
// bool = (value != 0). write_from_int64 clamps into integer targets and rounds the exact
// integer once into float targets. See docs/dtypes.md.
void write_from_double(double value, void* element, DataType dtype);
void write_from_int64(std::int64_t value, void* element, DataType dtype);

}  // namespace tileops
