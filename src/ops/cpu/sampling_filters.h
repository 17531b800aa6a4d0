// FilterReader: a row's k and p read from the sampling operators' optional k and p tensors
// (B elements or 1), with the run-time check of p's values.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "src/ops/contracts/top_k_top_p_sampler.decl.h"
#include "src/ops/contracts/topk_topp_sampling.decl.h"
#include "src/ops/cpu/sampling.h"
#include "tileops/core/error.h"
#include "tileops/ops/problem.h"

namespace tileops::ops::cpu {

class FilterReader {
  // Where both samplers declare k and p.
  static constexpr int kK = tensor_index(decls::top_k_top_p_sampler, "k");
  static constexpr int kP = tensor_index(decls::top_k_top_p_sampler, "p");
  static_assert(kK == tensor_index(decls::topk_topp_sampling, "topk") &&
                kP == tensor_index(decls::topk_topp_sampling, "topp"));

 public:
  // op and p_arg name p in errors (k needs no check: any value is valid).
  FilterReader(const Problem& problem, const char* op, const char* p_arg)
      : op_(op),
        p_arg_(p_arg),
        has_k_(problem.tensors[kK].present),
        has_p_(problem.tensors[kP].present),
        k_int64_(has_k_ && problem.tensors[kK].dtype == DataType::kInt64),
        p_float64_(has_p_ && problem.tensors[kP].dtype == DataType::kFloat64),
        k_stride_(stride_of(problem.tensors[kK])),
        p_stride_(stride_of(problem.tensors[kP])) {}

  RowFilter operator()(const Tensor& k, const Tensor& p, std::int64_t row) const {
    RowFilter filter;
    if (has_k_) {
      const std::int64_t at = row * k_stride_;
      filter.k = k_int64_ ? k.data_as<std::int64_t>()[at] : k.data_as<std::int32_t>()[at];
    }
    if (has_p_) {
      const std::int64_t at = row * p_stride_;
      filter.p = p_float64_ ? p.data_as<double>()[at] : p.data_as<float>()[at];
      if (!(filter.p > 0.0)) {
        throw_argument_error(ErrorKind::kInvalidArgument, op_, p_arg_,
                             "values > 0 (>= 1: no top-p filter)",
                             std::to_string(filter.p) + " for row " + std::to_string(row));
      }
    }
    return filter;
  }

 private:
  // One element serves every row (stride 0); B elements are read at their stride.
  static std::int64_t stride_of(const TensorDesc& t) {
    if (!t.present || t.shape.product() == 1 || t.shape.size() == 0) return 0;
    return t.strides[0];
  }

  const char* op_;
  const char* p_arg_;
  bool has_k_;
  bool has_p_;
  bool k_int64_;
  bool p_float64_;
  std::int64_t k_stride_;
  std::int64_t p_stride_;
};

}  // namespace tileops::ops::cpu
