// Float64 references of the operators, written independently of the kernels (plain loops over
// row-major float64 values). Used by the tests and by `tileops demo`.
#pragma once

#include <cstdint>
#include <vector>

#include "tileops/core/tensor.h"

namespace tileops::testing::reference {

using Values = std::vector<double>;

// NumPy-broadcast elementwise op of a (shape sa) and b (shape sb) to out_shape.
Values broadcast_binary(const Values& a, const Dims& sa, const Values& b, const Dims& sb,
                        const Dims& out_shape, double (*op)(double, double));

// op(a)·op(b) over the last two dims of row-major values (shapes sa, sb of rank >= 2, op = a
// transpose when ta/tb), batch dims NumPy-broadcast to out_shape [batch..., M, N].
Values matmul(const Values& a, const Dims& sa, bool ta, const Values& b, const Dims& sb, bool tb,
              const Dims& out_shape);

// x[rows, k]·w[n, k]ᵀ (+ bias[n] when given): linear's product.
Values linear(const Values& x, const Values& w, const Values* bias, std::int64_t rows,
              std::int64_t n, std::int64_t k);
// The same of tensors: input [..., K], weight [N, K], bias [N] or null; row-major [..., N].
Values linear(const Tensor& input, const Tensor& weight, const Tensor* bias);

double silu(double x);
Values rms_norm(const Values& x, const Values& w, double eps, std::int64_t width);
// Row-wise softmax of scale·x; columns j > limit(row) are masked to 0 (limit < 0: none).
Values softmax_rows(const Values& x, std::int64_t width, double scale, bool causal,
                    std::int64_t rows_per_matrix);
Values silu_and_mul_last_dim(const Values& x, std::int64_t width);
Values embedding(const Values& ids, const Values& weight, std::int64_t dim);

// fla's gated delta rule, token by token: q, k [B, T, H, K], v [B, T, HV, V], g, beta [B, T, HV]
// (row-major); sequences: the batch, or cu [N + 1] over B = 1 when not empty. `state` holds the
// initial [N, HV, K, V] (empty: zeros) and receives the final one. Returns o [B, T, HV, V].
struct DeltaRuleShape {
  std::int64_t b, t, h, hv, dk, dv;
};
Values gated_delta_rule(const Values& q, const Values& k, const Values& v, const Values& g,
                        const Values& beta, const DeltaRuleShape& s,
                        const std::vector<std::int64_t>& cu, double scale, bool l2norm,
                        Values& state);

}  // namespace tileops::testing::reference
