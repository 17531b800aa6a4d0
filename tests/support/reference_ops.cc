#include "tests/support/reference_ops.h"

#include <algorithm>
#include <cmath>

#include "tests/support/test_tensors.h"

namespace tileops::testing::reference {

Values broadcast_binary(const Values& a, const Dims& sa, const Values& b, const Dims& sb,
                        const Dims& out_shape, double (*op)(double, double)) {
  const int rank = out_shape.size();
  // Strides of a and b over the output's index space (0 where they broadcast).
  auto broadcast_strides = [rank](const Dims& s) {
    std::vector<std::int64_t> strides(static_cast<std::size_t>(rank), 0);
    std::int64_t stride = 1;
    for (int i = s.size() - 1, o = rank - 1; i >= 0; --i, --o) {
      strides[static_cast<std::size_t>(o)] = s[i] == 1 ? 0 : stride;
      stride *= s[i];
    }
    return strides;
  };
  const auto ast = broadcast_strides(sa);
  const auto bst = broadcast_strides(sb);
  Values out(static_cast<std::size_t>(out_shape.product()));
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::int64_t ai = 0;
    std::int64_t bi = 0;
    for (int d = 0; d < rank; ++d) {
      ai += index[d] * ast[d];
      bi += index[d] * bst[d];
    }
    out[i] = op(a[static_cast<std::size_t>(ai)], b[static_cast<std::size_t>(bi)]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Values matmul(const Values& a, const Dims& sa, bool ta, const Values& b, const Dims& sb, bool tb,
              const Dims& out_shape) {
  const int rank = out_shape.size();
  const std::int64_t m = out_shape[rank - 2], n = out_shape[rank - 1];
  const std::int64_t k = ta ? sa[sa.size() - 2] : sa[sa.size() - 1];
  // Batch index of a or b for output batch index `index` (size-1 and missing dims broadcast).
  auto batch_of = [&](const Dims& s, std::int64_t index) {
    std::int64_t offset = 0, stride = 1;
    for (int i = s.size() - 3, o = rank - 3; i >= 0; --i, --o) {
      std::int64_t extent = out_shape[o];
      std::int64_t coord = 1;
      std::int64_t rest = index;
      for (int q = rank - 3; q > o; --q) rest /= out_shape[q];
      coord = rest % extent;
      if (s[i] != 1) offset += coord * stride;
      stride *= s[i];
    }
    return offset;
  };
  const std::int64_t batches = out_shape.product() / std::max<std::int64_t>(1, m * n);
  Values out(static_cast<std::size_t>(out_shape.product()), 0.0);
  for (std::int64_t t = 0; t < batches; ++t) {
    const double* pa = a.data() + batch_of(sa, t) * m * k;
    const double* pb = b.data() + batch_of(sb, t) * k * n;
    double* pc = out.data() + t * m * n;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (std::int64_t p = 0; p < k; ++p) {
          sum += (ta ? pa[p * m + i] : pa[i * k + p]) * (tb ? pb[j * k + p] : pb[p * n + j]);
        }
        pc[i * n + j] = sum;
      }
    }
  }
  return out;
}

Values linear(const Values& x, const Values& w, const Values* bias, std::int64_t rows,
              std::int64_t n, std::int64_t k) {
  Values y = matmul(x, Dims{rows, k}, false, w, Dims{n, k}, true, Dims{rows, n});
  if (bias != nullptr) {
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += (*bias)[i % static_cast<std::size_t>(n)];
  }
  return y;
}

Values linear(const Tensor& input, const Tensor& weight, const Tensor* bias) {
  const std::int64_t k = input.size(-1), n = weight.size(0);
  const std::int64_t rows = k == 0 ? 0 : input.numel() / k;
  const Values b = bias != nullptr ? to_doubles(*bias) : Values{};
  return linear(to_doubles(input), to_doubles(weight), bias != nullptr ? &b : nullptr, rows, n, k);
}

// silu(-inf) is its limit, -0 (x / (1 + e^-x) would give -inf / inf = NaN).
double silu(double x) { return x == -INFINITY ? -0.0 : x / (1.0 + std::exp(-x)); }

Values rms_norm(const Values& x, const Values& w, double eps, std::int64_t width) {
  Values y(x.size());
  for (std::size_t row = 0; row * width < x.size(); ++row) {
    const double* xr = x.data() + row * width;
    double sum = 0.0;
    for (std::int64_t i = 0; i < width; ++i) sum += xr[i] * xr[i];
    const double scale = 1.0 / std::sqrt(sum / static_cast<double>(width) + eps);
    for (std::int64_t i = 0; i < width; ++i) y[row * width + i] = xr[i] * scale * w[i];
  }
  return y;
}

Values softmax_rows(const Values& x, std::int64_t width, double scale, bool causal,
                    std::int64_t rows_per_matrix) {
  Values y(x.size(), 0.0);
  for (std::size_t row = 0; row * width < x.size(); ++row) {
    const auto i = static_cast<std::int64_t>(row) % rows_per_matrix;
    const std::int64_t visible = causal ? width - rows_per_matrix + i + 1 : width;
    const double* xr = x.data() + row * width;
    double m = -INFINITY;
    for (std::int64_t j = 0; j < visible; ++j) m = std::max(m, scale * xr[j]);
    double sum = 0.0;
    for (std::int64_t j = 0; j < visible; ++j) sum += std::exp(scale * xr[j] - m);
    for (std::int64_t j = 0; j < visible; ++j) {
      y[row * width + j] = std::exp(scale * xr[j] - m) / sum;
    }
  }
  return y;
}

Values silu_and_mul_last_dim(const Values& x, std::int64_t width) {
  const std::int64_t d = width / 2;
  Values y(x.size() / 2);
  for (std::size_t row = 0; row * width < x.size(); ++row) {
    for (std::int64_t j = 0; j < d; ++j) {
      y[row * d + j] = silu(x[row * width + j]) * x[row * width + d + j];
    }
  }
  return y;
}

Values embedding(const Values& ids, const Values& weight, std::int64_t dim) {
  Values y(ids.size() * dim);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto id = static_cast<std::int64_t>(ids[i]);
    std::copy_n(weight.begin() + id * dim, dim, y.begin() + static_cast<std::int64_t>(i) * dim);
  }
  return y;
}

Values gated_delta_rule(const Values& q, const Values& k, const Values& v, const Values& g,
                        const Values& beta, const DeltaRuleShape& s,
                        const std::vector<std::int64_t>& cu, double scale, bool l2norm,
                        Values& state) {
  const std::int64_t n_seq = cu.empty() ? s.b : static_cast<std::int64_t>(cu.size()) - 1;
  Values o(static_cast<std::size_t>(s.b * s.t * s.hv * s.dv), 0.0);
  if (state.empty()) state.assign(static_cast<std::size_t>(n_seq * s.hv * s.dk * s.dv), 0.0);
  Values qt(s.dk), kt(s.dk), delta(s.dv), kv(s.dv);
  for (std::int64_t n = 0; n < n_seq; ++n) {
    const std::int64_t b = cu.empty() ? n : 0;
    const std::int64_t bos = cu.empty() ? 0 : cu[n], eos = cu.empty() ? s.t : cu[n + 1];
    for (std::int64_t hv = 0; hv < s.hv; ++hv) {
      const std::int64_t h = hv / (s.hv / s.h);
      double* st = state.data() + (n * s.hv + hv) * s.dk * s.dv;
      for (std::int64_t t = bos; t < eos; ++t) {
        double qn = 0, kn = 0;
        for (std::int64_t i = 0; i < s.dk; ++i) {
          qt[i] = q[((b * s.t + t) * s.h + h) * s.dk + i];
          kt[i] = k[((b * s.t + t) * s.h + h) * s.dk + i];
          qn += qt[i] * qt[i], kn += kt[i] * kt[i];
        }
        for (std::int64_t i = 0; i < s.dk; ++i) {
          if (l2norm) qt[i] /= std::sqrt(qn + 1e-6), kt[i] /= std::sqrt(kn + 1e-6);
          qt[i] *= scale;
        }
        const std::int64_t gate = (b * s.t + t) * s.hv + hv;
        const double decay = std::exp(g[gate]);
        for (std::int64_t i = 0; i < s.dk * s.dv; ++i) st[i] *= decay;
        std::fill(kv.begin(), kv.end(), 0.0);
        for (std::int64_t i = 0; i < s.dk; ++i) {
          for (std::int64_t j = 0; j < s.dv; ++j) kv[j] += st[i * s.dv + j] * kt[i];
        }
        for (std::int64_t j = 0; j < s.dv; ++j) {
          delta[j] = beta[gate] * (v[gate * s.dv + j] - kv[j]);
        }
        for (std::int64_t i = 0; i < s.dk; ++i) {
          for (std::int64_t j = 0; j < s.dv; ++j) st[i * s.dv + j] += kt[i] * delta[j];
        }
        for (std::int64_t j = 0; j < s.dv; ++j) {
          double acc = 0;
          for (std::int64_t i = 0; i < s.dk; ++i) acc += st[i * s.dv + j] * qt[i];
          o[gate * s.dv + j] = acc;
        }
      }
    }
  }
  return o;
}

}  // namespace tileops::testing::reference
