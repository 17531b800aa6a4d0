// What the sampling contracts (top_k_top_p_sampler, topk_topp_sampling) and top_k_top_p_mask
// share: the check of weights [B, V] with their k and p filters (and a sampler's out), by
// argument name, and the scalar forms' conversion of k and p to the tensors the operators take.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

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

// Where an operator's declaration puts its weights, k, p and (samplers) out, and their names.
// (Computed outside the hooks: clang 14 evaluates a consteval call on a template parameter too
// early, see gated_problem.h.)
struct SamplingArgs {
  int weights, k, p, out;  // tensor indices; out = -1: none (top_k_top_p_mask)
  std::string_view weights_name, k_name, p_name;
};
consteval SamplingArgs sampling_args(const OpDecl& op, std::string_view weights, std::string_view k,
                                     std::string_view p, bool has_out = true) {
  return {tensor_index(op, weights),
          tensor_index(op, k),
          tensor_index(op, p),
          has_out ? tensor_index(op, "out") : -1,
          weights,
          k,
          p};
}

// Beyond the declarations: weights [B, V] with 1 <= V < 2^31 (tokens are 32-bit); k and p
// absent or rank 0/1 with B or 1 elements; out, when there is one, [B].
void check_sampling(const ArgCheck& check, std::span<const Tensor> tensors,
                    const SamplingArgs& args);

// Whether an optional tensor was given (C: not NULL; Python: not None).
inline bool is_present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// The element of a filter (B elements or 1, checked by check_sampling) that applies to `row`.
inline std::int64_t filter_offset(const Tensor& filter, std::int64_t row) {
  return filter.numel() == 1 ? 0 : row * filter.stride(0);
}

}  // namespace tileops::ops
