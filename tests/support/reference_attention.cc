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
  std::vector<bool> visible;
  for (std::size_t b = 0; b + 1 < cu_q.size(); ++b) {
    const std::int64_t lq = cu_q[b + 1] - cu_q[b], lk = cu_kv[b + 1] - cu_kv[b];
    for (std::int64_t i = 0; i < lq; ++i) {
      const std::int64_t diagonal = i + lk - lq;
      for (std::int64_t h = 0; h < h_count; ++h) {
        const std::int64_t kh = h / group;
        const double* qi = &q[((cu_q[b] + i) * h_count + h) * d];
        scores.assign(lk, -std::numeric_limits<double>::infinity());
        visible.assign(lk, false);
        // The max keeps NaN, so that a NaN score makes the whole row NaN; +inf and all -inf
        // give NaN through e^(inf - inf).
        double best = -std::numeric_limits<double>::infinity();
        bool any = false;
        for (std::int64_t j = 0; j < lk; ++j) {
          visible[j] = (!spec.causal || j <= diagonal) &&
                       (spec.window_left < 0 || j >= diagonal - spec.window_left) &&
                       (spec.window_right < 0 || j <= diagonal + spec.window_right);
          if (!visible[j]) continue;
          any = true;
          const double* kj = &k[((cu_kv[b] + j) * spec.kv_heads + kh) * d];
          double s = 0;
          for (std::int64_t c = 0; c < d; ++c) s += qi[c] * kj[c];
          scores[j] = s * spec.scale;
          if (std::isnan(scores[j]) || scores[j] > best) best = scores[j];
          if (std::isnan(best)) break;
        }
        if (!any) continue;  // nothing visible: zeros
        double* o = &out[((cu_q[b] + i) * h_count + h) * d];
        if (std::isnan(best) || std::isinf(best)) {
          std::fill(o, o + d, std::numeric_limits<double>::quiet_NaN());
          continue;
        }
        double total = 0;
        for (std::int64_t j = 0; j < lk; ++j) {
          if (visible[j]) total += (scores[j] = std::exp(scores[j] - best));
        }
        // Every visible key's value counts, even at probability 0 (0·NaN is NaN, as in torch).
        for (std::int64_t j = 0; j < lk; ++j) {
          if (!visible[j]) continue;
          const double* vj = &v[((cu_kv[b] + j) * spec.kv_heads + kh) * d];
          for (std::int64_t c = 0; c < d; ++c) o[c] += scores[j] / total * vj[c];
        }
      }
    }
  }
  return out;
}

std::vector<double> attention_lse(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<std::int64_t>& cu_q,
                                  const std::vector<std::int64_t>& cu_kv,
                                  const AttentionSpec& spec) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::int64_t h_count = spec.heads, d = spec.head_size;
  const std::int64_t group = spec.heads / spec.kv_heads;
  const std::int64_t tq = cu_q.back();
  std::vector<double> lse(static_cast<std::size_t>(h_count * tq), -kInf);
  std::vector<double> scores;
  for (std::size_t b = 0; b + 1 < cu_q.size(); ++b) {
    const std::int64_t lq = cu_q[b + 1] - cu_q[b], lk = cu_kv[b + 1] - cu_kv[b];
    for (std::int64_t i = 0; i < lq; ++i) {
      const std::int64_t diagonal = i + lk - lq;
      for (std::int64_t h = 0; h < h_count; ++h) {
        const double* qi = &q[((cu_q[b] + i) * h_count + h) * d];
        scores.clear();
        for (std::int64_t j = 0; j < lk; ++j) {
          const bool visible = (!spec.causal || j <= diagonal) &&
                               (spec.window_left < 0 || j >= diagonal - spec.window_left) &&
                               (spec.window_right < 0 || j <= diagonal + spec.window_right);
          if (!visible) continue;
          const double* kj = &k[((cu_kv[b] + j) * spec.kv_heads + h / group) * d];
          double s = 0;
          for (std::int64_t c = 0; c < d; ++c) s += qi[c] * kj[c];
          scores.push_back(s * spec.scale);
        }
        double best = -kInf;
        for (double s : scores)
          best = std::isnan(s) || std::isnan(best) ? s + best : std::max(best, s);
        double& out = lse[h * tq + cu_q[b] + i];
        if (std::isnan(best) || best == kInf) {
          out = std::numeric_limits<double>::quiet_NaN();
        } else if (best != -kInf) {
          double total = 0;
          for (double s : scores) total += std::exp(s - best);
          out = best + std::log(total);
        }
      }
    }
  }
  return lse;
}

}  // namespace tileops::testing::reference
