// Float64 reference of the rotary embeddings for the tests: a vLLM cos/sin cache and the
// rotation of [*tokens, H*D] / [*tokens, H, D] operands written as plain loops over float64
// values (token t is row-major over the tokens' dims, as positions' values are).
#pragma once

#include <cmath>
#include <vector>

#include "tests/support/test_tensors.h"

namespace tileops::testing {

// cache[p, i] = cos(p·θ_i), cache[p, rot/2 + i] = sin(p·θ_i), θ_i = 10000^(-2i/rot).
inline TensorStorage rotary_cache(std::int64_t max_pos, std::int64_t rot_dim, DataType dtype,
                                  Layout layout) {
  TensorStorage cache = poisoned({max_pos, rot_dim}, dtype, layout);
  std::vector<double> v(static_cast<std::size_t>(max_pos * rot_dim));
  const std::int64_t half = rot_dim / 2;
  for (std::int64_t p = 0; p < max_pos; ++p) {
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle =
          static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / rot_dim);
      v[p * rot_dim + i] = std::cos(angle);
      v[p * rot_dim + half + i] = std::sin(angle);
    }
  }
  from_doubles(cache, v);
  return cache;
}

// Rotates x ([*tokens, H*D] or [*tokens, H, D] values; `tokens` of them, x.size(0) when < 0)
// with per-token cos/sin halves: cos_half(t, i), sin_half(t, i) for i < rot/2. Elements past
// rot are unchanged.
template <typename CosSin>
std::vector<double> rotate_reference(const Tensor& x, std::int64_t head_size, std::int64_t rot,
                                     bool neox, CosSin cos_sin, std::int64_t tokens = -1) {
  std::vector<double> v = to_doubles(x);
  if (tokens < 0) tokens = x.size(0);
  if (tokens == 0) return v;
  const std::int64_t heads = static_cast<std::int64_t>(v.size()) / (tokens * head_size);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t h = 0; h < heads; ++h) {
      double* head = v.data() + (t * heads + h) * head_size;
      for (std::int64_t i = 0; i < rot / 2; ++i) {
        const auto [c, s] = cos_sin(t, i);
        const std::int64_t a = neox ? i : 2 * i;
        const std::int64_t b = neox ? i + rot / 2 : 2 * i + 1;
        const double x1 = head[a];
        const double x2 = head[b];
        head[a] = x1 * c - x2 * s;
        head[b] = x2 * c + x1 * s;
      }
    }
  }
  return v;
}

// rotary_embedding's expected result for x with positions (any shape: x leads with it) and a
// cos_sin_cache.
inline std::vector<double> rotary_reference(const Tensor& x, const Tensor& positions,
                                            const Tensor& cache, std::int64_t head_size,
                                            bool neox) {
  const std::vector<double> pos = to_doubles(positions);
  const std::vector<double> table = to_doubles(cache);
  const std::int64_t rot = cache.size(1);
  return rotate_reference(
      x, head_size, rot, neox,
      [&](std::int64_t t, std::int64_t i) {
        const auto row = static_cast<std::int64_t>(pos[t]) * rot;
        return std::pair{table[row + i], table[row + rot / 2 + i]};
      },
      positions.numel());
}

}  // namespace tileops::testing
