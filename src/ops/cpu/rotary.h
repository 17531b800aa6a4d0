// The rotation engine shared by rotary_embedding and apply_rotary_pos_emb: query and key heads
// rotated token by token with per-element cos/sin tables that the operator fills per token.
#pragma once

#include <cstdint>

#include "tileops/ops/problem.h"
#include "tileops/runtime/context.h"
#include "tileops/runtime/function_ref.h"

namespace tileops::ops::cpu {

// Element offsets of the tokens of a [*tokens, ...] operand, token t numbered row-major over
// the leading dims. Dims that collapse into one stride are merged (usually all of them); the
// others stay, so a transposed [batch, seq] view is walked as it lies, without a copy.
class TokenOffsets {
 public:
  TokenOffsets() = default;
  // Over the first `rank` dims of shape and strides.
  TokenOffsets(const Dims& shape, const Dims& strides, int rank);

  std::int64_t operator()(std::int64_t t) const {
    if (shape_.size() == 1) return t * strides_[0];
    std::int64_t offset = 0;
    for (int i = shape_.size() - 1; i >= 0; --i) {
      offset += (t % shape_[i]) * strides_[i];
      t /= shape_[i];
    }
    return offset;
  }

 private:
  Dims shape_;  // outermost first, no extents of 1
  Dims strides_;
};

// One operand as [*tokens, heads, head_size]: element (t, h, i) at token(t) + h·head + i·element.
struct HeadRows {
  std::int64_t heads = 0;
  TokenOffsets token;
  std::int64_t head = 0;
  std::int64_t element = 0;
  // t is [*tokens, H·head_size] or [*tokens, H, head_size] with `token_rank` leading dims.
  static HeadRows of(const TensorDesc& t, std::int64_t head_size, int token_rank);
};

// Fills c and s (rot_dim floats each) for token t (row-major over the tokens' dims): out = x·c +
// partner(x)·s, the sign of the rotation folded into s. scratch: rot_dim floats the function may
// use.
using RotaryTables = FunctionRef<void(std::int64_t t, float* c, float* s, float* scratch)>;

class RotaryPlan {
 public:
  // tensors in the order query, key, query_out, key_out (key and key_out may be absent), each
  // leading with the tokens' `token_rank` dims.
  RotaryPlan(const TensorDesc& query, const TensorDesc& key, const TensorDesc& query_out,
             const TensorDesc& key_out, std::int64_t head_size, std::int64_t rot_dim, bool neox,
             int token_rank);

  // Rotates the first rot_dim elements of every head and copies the rest when an output is not
  // its input. Tokens are split over the thread pool.
  void run(const Tensor& query, const Tensor& key, const Tensor& query_out, const Tensor& key_out,
           RotaryTables tables, const Context& ctx) const;

  std::int64_t tokens() const { return tokens_; }
  std::int64_t rot_dim() const { return rot_dim_; }
  bool neox() const { return neox_; }

 private:
  void rotate_heads(const Tensor& in, const HeadRows& in_rows, const Tensor& out,
                    const HeadRows& out_rows, std::int64_t t, const float* c, const float* s,
                    float* x) const;

  std::int64_t tokens_;
  std::int64_t head_size_;
  std::int64_t rot_dim_;
  bool neox_;
  bool has_key_;
  HeadRows query_, key_, query_out_, key_out_;
};

// Per-element tables from per-frequency halves cos_half[i], sin_half[i], i < rot_dim/2, in the
// layout of the style (neox: i and i + rot_dim/2; GPT-J: 2i and 2i+1).
void expand_frequency_tables(const float* cos_half, const float* sin_half, std::int64_t rot_dim,
                             bool neox, float* c, float* s);

// Signs the per-element sin table in place for the style: the first element of each pair gets
// -sin (Hugging Face's rotate_half / rotate_every_two).
void sign_element_tables(std::int64_t rot_dim, bool neox, float* s);

}  // namespace tileops::ops::cpu
