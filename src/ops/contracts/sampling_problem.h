// Validation shared by the two sampling operators: the weights matrix, the optional per-row k
// and p tensors, the output, and the scalar forms' conversion of k and p to tensors.
#pragma once

#include <cstdint>
#include <string_view>

#include "src/ops/framework/arg_check.h"
#include "tileops/ops/problem.h"

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

// The Problem of a sampling operator: tensors {weights, k, p, seed, out}. weights: [B, V] of a
// float dtype (V >= 1, < 2^31); k: absent or int32/int64 with B or 1 elements; p: absent or
// float32/float64 with B or 1 elements; out: `out_dtype` [B], apart from every input.
Problem make_sampling_problem(std::string_view op, const Tensor& weights,
                              std::string_view weights_arg, const Tensor& k, std::string_view k_arg,
                              const Tensor& p, std::string_view p_arg, const Tensor& seed,
                              const Tensor& out, DataType out_dtype);

// The aliasing rule alone (checked on every call of a class form).
void check_sampling_memory(std::string_view op, const Tensor& weights, std::string_view weights_arg,
                           const Tensor& k, const Tensor& p, const Tensor& out);

}  // namespace tileops::ops
