// rotary_embedding: rotary position embedding of query and key with a cos/sin cache indexed by
// position (vLLM semantics).
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// positions: int32/int64 [T], or vLLM's batched [batch, seq] (any rank >= 1: the tokens are its
// elements, row-major), values in [0, max_pos) (checked before anything is written).
// query: [*positions.shape, H·head_size] or [*positions.shape, H, head_size]; key: either layout
// with Hkv heads and query's dtype, or an undefined Tensor (no key). dtypes float32, float16,
// bfloat16; float32 math, rounded once. cos_sin_cache: [max_pos, rot_dim], any of those dtypes,
// row p = cos(p·θ_i) for i < rot_dim/2, then sin(p·θ_i) (vLLM layout). rotary_dim <= 0 means
// rot_dim; otherwise it must equal rot_dim; it is even and <= head_size, and only the first
// rot_dim elements of each head rotate (partial rotary; the rest is copied to out-of-place
// outputs). is_neox_style: element i pairs with i + rot_dim/2 (GPT-NeoX, Llama); otherwise 2i
// pairs with 2i+1 (GPT-J). query_out / key_out: undefined means in place (into query / key);
// else the shape and dtype of the input, which they may be (the same view) but not otherwise
// overlap. Any strides, and no copies: the tokens' dims need not collapse into one stride (a
// transposed [batch, seq] view).
void rotary_embedding(const Tensor& positions, const Tensor& query, const Tensor& key,
                      std::int64_t head_size, const Tensor& cos_sin_cache, bool is_neox_style,
                      std::int64_t rotary_dim, const Tensor& query_out, const Tensor& key_out,
                      const Context& ctx = {});

// In place into query and key (vLLM's torch.ops._C.rotary_embedding).
void rotary_embedding(const Tensor& positions, const Tensor& query, const Tensor& key,
                      std::int64_t head_size, const Tensor& cos_sin_cache, bool is_neox_style,
                      const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data. Outputs
// are explicit (pass query/key themselves for in place).
class RotaryEmbedding {
 public:
  RotaryEmbedding(const Tensor& positions, const Tensor& query, const Tensor& key,
                  std::int64_t head_size, const Tensor& cos_sin_cache, bool is_neox_style,
                  std::int64_t rotary_dim, const Tensor& query_out, const Tensor& key_out,
                  int implementation_index = 0);
  void operator()(const Tensor& positions, const Tensor& query, const Tensor& key,
                  const Tensor& cos_sin_cache, const Tensor& query_out, const Tensor& key_out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
