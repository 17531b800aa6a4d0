// apply_rotary_pos_emb: rotary position embedding with cos/sin already gathered per token.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// query, key, query_out, key_out, head_size, is_neox_style: as rotary_embedding (key and
// key_out may be undefined; undefined outputs mean in place). cos and sin: [T, c], one shape,
// any float32/float16/bfloat16 dtype, row t for token t. Two forms, told apart by c:
//  - c == head_size: per-element tables as in Hugging Face (`q·cos + rotate(q)·sin`, cos/sin
//    repeated per pair in the style's layout); every element rotates;
//  - 2c <= head_size: per-frequency tables (vLLM's cos/sin halves); rot_dim = 2c, and the
//    elements past rot_dim are copied.
// Any other c is an error naming cos.
void apply_rotary_pos_emb(const Tensor& query, const Tensor& key, const Tensor& cos,
                          const Tensor& sin, std::int64_t head_size, bool is_neox_style,
                          const Tensor& query_out, const Tensor& key_out, const Context& ctx = {});

// Class form (outputs explicit: pass query/key themselves for in place).
class ApplyRotaryPosEmb {
 public:
  ApplyRotaryPosEmb(const Tensor& query, const Tensor& key, const Tensor& cos, const Tensor& sin,
                    std::int64_t head_size, bool is_neox_style, const Tensor& query_out,
                    const Tensor& key_out, int implementation_index = 0);
  void operator()(const Tensor& query, const Tensor& key, const Tensor& cos, const Tensor& sin,
                  const Tensor& query_out, const Tensor& key_out, const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
