// Validation shared by rotary_embedding and apply_rotary_pos_emb: query, key and their outputs
// as [T, H·head_size] or [T, H, head_size] views, and the aliasing rules of the outputs.
#pragma once

#include <cstdint>
#include <string_view>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/tensor.h"

namespace tileops::ops {

// False for an omitted optional tensor (a default-constructed Tensor).
inline bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// The outputs' names in errors (the in-place forms name the inputs they write into).
struct RotaryOutputNames {
  std::string_view query_out = "query_out";
  std::string_view key_out = "key_out";
};

// Checks query, key (may be absent), query_out and key_out (present exactly when key is):
// float dtypes, one dtype, rank 2 or 3 with T = `tokens` rows, whole heads of head_size, a
// rotated prefix rot_dim that is even, >= 2 and <= head_size, outputs shaped as their inputs.
// Returns nothing; throws Error naming the argument.
void check_rotary_operands(const ArgCheck& check, const Tensor& query, const Tensor& key,
                           std::int64_t head_size, std::int64_t rot_dim, std::int64_t tokens,
                           const Tensor& query_out, const Tensor& key_out,
                           RotaryOutputNames names = {});

// Outputs may be exactly their input's view (in place) and overlap nothing else; `tables` are
// the cos/sin inputs of the operator (cos_sin_cache, or cos and sin). Query and key sides may
// interleave without touching (views of one fused QKV buffer).
void check_rotary_memory(const ArgCheck& check, const Tensor& query, const Tensor& key,
                         std::initializer_list<ArgCheck::Named> tables, const Tensor& query_out,
                         const Tensor& key_out, RotaryOutputNames names = {});

// The output to use: `out` when given, else `input` (in place).
inline const Tensor& output_or_input(const Tensor& out, const Tensor& input) {
  return present(out) ? out : input;
}

}  // namespace tileops::ops
