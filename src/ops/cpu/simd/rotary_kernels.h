// SIMD kernels of the rotary embeddings over float32 head rows: out = x·c + partner(x)·s, where
// c and s are per-element tables (the sign of the rotation folded into s).
#pragma once

#include <cstdint>

namespace tileops::ops::cpu {

// GPT-NeoX style: element i pairs with i + n/2 (n even): out[i] = x[i]·c[i] + x[i ± n/2]·s[i].
// out may alias x.
void rotate_halves(const float* x, const float* c, const float* s, std::int64_t n, float* out);

// GPT-J style: element 2j pairs with 2j+1 (n even): out[i] = x[i]·c[i] + x[i ^ 1]·s[i]. out may
// alias x.
void rotate_pairs(const float* x, const float* c, const float* s, std::int64_t n, float* out);

}  // namespace tileops::ops::cpu
