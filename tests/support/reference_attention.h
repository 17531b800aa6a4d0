// Float64 reference attention over packed variable-length sequences, written as the plain
// definition (every score materialised, softmax per row): independent of the tiled kernels.
#pragma once

#include <cstdint>
#include <vector>

namespace tileops::testing::reference {

struct AttentionSpec {
  std::int64_t heads = 1, kv_heads = 1, head_size = 1;
  double scale = 1.0;
  bool causal = false;
  std::int64_t window_left = -1, window_right = -1;  // -1: unbounded
};

// q [Tq, H, D], k and v [Tkv, Hkv, D] row-major; sequence b has queries [cu_q[b], cu_q[b+1]) and
// keys [cu_kv[b], cu_kv[b+1]). Query i of a sequence (Lq queries, Lk keys) sees key j when
// j <= i + Lk - Lq (causal) and i + Lk - Lq - left <= j <= i + Lk - Lq + right (bounds >= 0);
// a query that sees nothing gets zeros. Non-finite inputs as the math gives: a NaN or +inf
// score, or visible scores all -inf, make the row NaN; a NaN or Inf in a visible key's value
// reaches the output (0·NaN is NaN), one in a masked key's value does not. Returns [Tq, H, D].
std::vector<double> attention(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, const std::vector<std::int64_t>& cu_q,
                              const std::vector<std::int64_t>& cu_kv, const AttentionSpec& spec);

// flash_attn_varlen_func's softmax_lse of the same attention: [H, Tq], the natural log of
// Σ exp(score) over each query row's visible keys (scores scaled). -inf for a row that sees no
// key or whose visible scores are all -inf; NaN where a visible score is NaN or +inf (the
// output's NaN rows).
std::vector<double> attention_lse(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<std::int64_t>& cu_q,
                                  const std::vector<std::int64_t>& cu_kv,
                                  const AttentionSpec& spec);

}  // namespace tileops::testing::reference
