// Helpers shared by the C++ tests: random and poisoned tensors (contiguous or strided),
// float64 views of any tensor, and tolerance checks against float64 references.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tileops/core/tensor_storage.h"

namespace tileops::testing {

enum class Layout {
  kContiguous,
  kStrided,  // every dim padded: gaps between elements and between rows
};

inline const char* layout_name(Layout layout) {
  return layout == Layout::kContiguous ? "contiguous" : "strided";
}

// Strides for `shape` with gaps (last-dim stride 2, each outer stride padded by 3 elements).
Dims padded_strides(const Dims& shape);

// Storage for `shape` in `layout`; every byte (gaps included) poisoned with 0xFF, which is NaN
// for every float dtype and -1 for signed integers.
TensorStorage poisoned(const Dims& shape, DataType dtype, Layout layout = Layout::kContiguous);

// Poisoned storage whose elements are then set to uniform random values in [lo, hi), rounded
// to the dtype (integers: uniform integers in [lo, hi)).
TensorStorage random_tensor(const Dims& shape, DataType dtype, std::mt19937_64& rng,
                            Layout layout = Layout::kContiguous, double lo = -2.0, double hi = 2.0);

// random_tensor (floats) with about one element in `every` replaced by NaN (either sign), +inf
// or -inf, and at least one of each when there is room: for the non-finite cases of the tests.
TensorStorage random_nonfinite_tensor(const Dims& shape, DataType dtype, std::mt19937_64& rng,
                                      Layout layout = Layout::kContiguous, int every = 8);

// Row-major element values as float64.
std::vector<double> to_doubles(const Tensor& t);
// Row-major raw bits of the elements (NaN payloads and signs included), for exact copies.
std::vector<std::uint64_t> element_bits(const Tensor& t);
// Writes row-major values into t (rounded to its dtype).
void from_doubles(const Tensor& t, const std::vector<double>& values);

// Raw bytes of the whole allocation, to prove that a failed call wrote nothing.
std::vector<unsigned char> snapshot(const TensorStorage& storage);

// Tolerances per dtype for float32-accumulated results: |a - e| <= atol + rtol·|e|.
struct Tolerance {
  double atol;
  double rtol;
};
Tolerance tolerance_for(DataType dtype);
// tolerance_for(dtype) widened for a dot product of `k` terms in [-2, 2) accumulated in float32
// (about k·2^-22 absolute error on top of the result's rounding).
Tolerance dot_tolerance(DataType dtype, std::int64_t k);

// Returns "" when every element is within tolerance (NaN only where expected is NaN), else a
// message with the count, the worst element and its index.
std::string compare(const Tensor& actual, const std::vector<double>& expected, Tolerance tol);

// Largest |actual - expected| over finite elements (for the demo's error column).
double max_abs_error(const Tensor& actual, const std::vector<double>& expected);

}  // namespace tileops::testing
