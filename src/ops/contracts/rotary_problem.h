// Validation shared by rotary_embedding and apply_rotary_pos_emb (their check hooks): query, key
// and their outputs as [*tokens, H·head_size] or [*tokens, H, head_size] views. The declarations
// state the dtypes, the outputs' shapes and that an omitted output is its input, written in place.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/tensor.h"

namespace tileops::ops {

// False for an omitted optional tensor (a default-constructed Tensor).
inline bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// The tokens every operand leads with: their shape (rank >= 1: positions' shape, or [T]) and
// where it comes from, said in the errors ("positions' shape").
struct RotaryTokens {
  const Dims& shape;
  std::string_view source;
};

// query, key (may be absent) and the outputs (present exactly when key is; an omitted output is
// its input, named as such): the tokens' shape then H·head_size or H, head_size (whole heads),
// a rotated prefix rot_dim that is even, >= 2 and <= head_size. The outputs must not overlap the
// cos/sin `tables` at all (the declaration lets them be their input's view).
void check_rotary_operands(const ArgCheck& check, const Tensor& query, const Tensor& key,
                           std::int64_t head_size, std::int64_t rot_dim, RotaryTokens tokens,
                           const Tensor& query_out, const Tensor& key_out,
                           std::initializer_list<ArgCheck::Named> tables);

}  // namespace tileops::ops
