// Helpers for the tile-language tests: random tensors, float64 references and comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "tests/support/test_tensors.h"
#include "tileops/tl.h"

namespace tileops::testing::tl_test {

namespace tl = ::tileops::tl;

inline std::vector<double> map(const std::vector<double>& x,
                               const std::function<double(double)>& f) {
  std::vector<double> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = f(x[i]);
  return out;
}

// Tolerance for a result rounded to `dtype` after float64-exact math: half an ulp of the dtype
// plus float32 intermediate rounding.
inline Tolerance tol(DataType dtype) {
  if (dtype == DataType::kFloat64) return {1e-12, 1e-12};
  if (dtype == DataType::kFloat32) return {2e-6, 2e-6};
  return tolerance_for(dtype);
}

// The block counts every test launches with (0 = all cores).
inline const std::vector<int>& core_nums() {
  static const std::vector<int> kCores = {1, 3, 16, 0};
  return kCores;
}

}  // namespace tileops::testing::tl_test
