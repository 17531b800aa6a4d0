// cast: out = input converted to out's dtype.
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// Any dtype pair. Floats: round-to-nearest-even (HiF8: ties away, its own rounding);
// float8_e4m3fn saturates to ±448 (it has no infinity), float8_e5m2, float16, bfloat16 and
// HiF8 overflow to ±Inf. To integers: truncation toward zero, saturating at the type's range,
// NaN -> 0. To bool: value != 0. Integer sources convert from their exact value (one rounding;
// integer -> integer saturates). Same shapes; any strides; out may be input's own memory when
// the element sizes match. Details: docs/dtypes.md.
void cast(const Tensor& input, const Tensor& out, const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class Cast {
 public:
  Cast(const Tensor& input, const Tensor& out, int implementation_index = 0);
  void operator()(const Tensor& input, const Tensor& out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
