#include "tests/support/reference_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tileops::testing::reference {

std::vector<double> attention(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, const std::vector<std::int64_t>& cu_q,
                              const std::vector<std::int64_t>& cu_kv, const AttentionSpec& spec) {
  const std::int64_t h_count = spec.heads, d = spec.head_size;
  const std::int64_t group = spec.heads / spec.kv_heads;
  std::vector<double> out(q.size(), 0.0);
  std::vector<double> scores;
  for (std::size_t b = 0; b + 1 < cu_q.size(); ++b) {
    const std::int64_t lq = cu_q[b + 1] - cu_q[b], lk = cu_kv[b + 1] - cu_kv[b];
    for (std::int64_t i = 0; i < lq; ++i) {
      const std::int64_t diagonal = i + lk - lq;
      for (std::int64_t h = 0; h < h_count; ++h) {
        const std::int64_t kh = h / group;
        const double* qi = &q[((cu_q[b] + i) * h_count + h) * d];
        scores.assign(lk, -std::numeric_limits<double>::infinity());
        double best = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < lk; ++j) {
          const bool visible = (!spec.causal || j <= diagonal) &&
                               (spec.window_left < 0 || j >= diagonal - spec.window_left) &&
                               (spec.window_right < 0 || j <= diagonal + spec.window_right);
          if (!visible) continue;
          const double* kj = &k[((cu_kv[b] + j) * spec.kv_heads + kh) * d];
          double s = 0;
          for (std::int64_t c = 0; c < d; ++c) s += qi[c] * kj[c];
          scores[j] = s * spec.scale;
          best = std::max(best, scores[j]);
        }
        if (best == -std::numeric_limits<double>::infinity()) continue;  // nothing visible
        double total = 0;
        for (double& s : scores) total += (s = std::exp(s - best));
        double* o = &out[((cu_q[b] + i) * h_count + h) * d];
        for (std::int64_t j = 0; j < lk; ++j) {
          if (scores[j] == 0) continue;
          const double* vj = &v[((cu_kv[b] + j) * spec.kv_heads + kh) * d];
          for (std::int64_t c = 0; c < d; ++c) o[c] += scores[j] / total * vj[c];
        }
      }
    }
  }
  return out;
}

}  // namespace tileops::testing::reference
