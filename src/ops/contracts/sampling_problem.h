// What the two sampling contracts share: their check hook over tensors {weights, k, p, seed,
// out}, and the scalar forms' conversion of k and p to the tensors the operators take.
#pragma once

#include <cstdint>
#include <span>

#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {

// Scalar k and p as the tensors the operators take: 1-element views of these fields, or
// absent when the filter is off (k <= 0 or k >= V; p >= 1). p <= 0 or NaN is an error naming
// `p_arg`.
struct ScalarFilters {
  std::int64_t k_value = 0;
  double p_value = 1.0;
  Tensor k;
  Tensor p;
  ScalarFilters(const ArgCheck& check, std::int64_t k, double p, std::int64_t vocab,
                std::string_view p_arg);
  ScalarFilters(const ScalarFilters&) = delete;
  ScalarFilters& operator=(const ScalarFilters&) = delete;
};

// The seed as the rank-0 int64 tensor the implementations read (a tensor, not an attribute,
// so that a new seed reuses the cached instance).
inline Tensor seed_tensor(std::uint64_t& seed) { return Tensor(&seed, Dims{}, DataType::kInt64); }

// The hook of op `decl` (beyond its declaration): weights [B, V] with 1 <= V < 2^31; k and p
// absent or with B or 1 elements; out [B].
template <const OpDecl* decl>
void check_sampling(const ArgCheck& check, std::span<const Tensor> tensors,
                    std::span<double> attributes);

}  // namespace tileops::ops
