// The sampling core shared by top_k_top_p_sampler and topk_topp_sampling: per-row top-k and
// top-p filtering of non-negative weights and one seeded draw per row.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/runtime/context.h"
#include "tileops/runtime/function_ref.h"

namespace tileops::ops::cpu {

// A row's filter: k <= 0 or k >= V keeps every token; p >= 1 keeps the whole (top-k) mass.
struct RowFilter {
  std::int64_t k = 0;
  double p = 1.0;
};

// The uniform draw in [0, 1) of `row` for `seed`: 53 bits of splitmix64(seed ^
// splitmix64(row)). Counter-based, so a row's draw does not depend on threads or chunks.
double uniform_draw(std::uint64_t seed, std::int64_t row);

// The token drawn with u in [0, 1) from weights w[0, n) (non-negative, total = Σ w > 0) under
// `filter`: the top k by weight (ties: lower index first), then the shortest prefix of those by
// decreasing weight whose mass is >= p times their mass, renormalised. The draw walks the kept
// tokens by decreasing weight (index order when nothing is filtered). keys: n scratch words.
std::int64_t sample_row(const float* w, std::int64_t n, double total, RowFilter filter, double u,
                        std::uint64_t* keys);

// Σ w[i] in float64 with four independent accumulators (a serial float64 chain would cost more
// than the exp pass).
double sum_f64(const float* w, std::int64_t n);

// Fills the weights of a row (n floats) and returns their sum; throws Error for a bad row.
using RowWeights = FunctionRef<double(std::int64_t row, float* w)>;
using RowFilters = FunctionRef<RowFilter(std::int64_t row)>;

// Samples rows [0, rows) of width n over the thread pool and writes the tokens to out (int32 or
// int64 [rows], any stride) only when every row succeeded; otherwise rethrows the error of the
// lowest failing row, leaving out untouched.
void sample_rows(std::int64_t rows, std::int64_t n, RowWeights weights, RowFilters filters,
                 std::uint64_t seed, const Tensor& out, const Context& ctx);

}  // namespace tileops::ops::cpu
