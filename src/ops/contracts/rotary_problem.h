// Validation shared by rotary_embedding and apply_rotary_pos_emb (their check hooks): query, key
// and their outputs as [T, H·head_size] or [T, H, head_size] views. The declarations state the
// dtypes, the outputs' shapes and that an omitted output is its input, written in place.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "src/ops/framework/arg_check.h"
#include "tileops/core/tensor.h"

namespace tileops::ops {

// False for an omitted optional tensor (a default-constructed Tensor).
inline bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

// query, key (may be absent) and the outputs (present exactly when key is; an omitted output is
// its input, named as such): rank 2 or 3 with T = `tokens` rows, whole heads of head_size, a
// rotated prefix rot_dim that is even, >= 2 and <= head_size. The outputs must not overlap the
// cos/sin `tables` at all (the declaration lets them be their input's view).
void check_rotary_operands(const ArgCheck& check, const Tensor& query, const Tensor& key,
                           std::int64_t head_size, std::int64_t rot_dim, std::int64_t tokens,
                           const Tensor& query_out, const Tensor& key_out,
                           std::initializer_list<ArgCheck::Named> tables);

}  // namespace tileops::ops
