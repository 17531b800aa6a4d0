#include "src/ops/contracts/rotary_problem.h"

#include <string>

namespace tileops::ops {
namespace {

// "[2, 3, H*64] or [2, 3, H, 64] (the leading dims are positions' shape)".
std::string layouts(RotaryTokens tokens, std::int64_t head_size) {
  std::string lead = "[";
  for (const std::int64_t n : tokens.shape) lead += std::to_string(n) + ", ";
  const std::string d = std::to_string(head_size);
  return lead + "H*" + d + "] or " + lead + "H, " + d + "] (the leading dims are " +
         std::string(tokens.source) + ")";
}

// t is [*tokens, H*head_size] or [*tokens, H, head_size]: its leading dims are the tokens'
// shape, however they are strided (the implementations do not need them to collapse).
void check_heads(const ArgCheck& check, const Tensor& t, std::string_view arg,
                 std::int64_t head_size, RotaryTokens tokens) {
  const int lead = tokens.shape.size();
  bool ok = t.rank() == lead + 1 || t.rank() == lead + 2;
  for (int i = 0; ok && i < lead; ++i) ok = t.size(i) == tokens.shape[i];
  if (ok) ok = t.rank() == lead + 2 ? t.size(lead + 1) == head_size : t.size(lead) % head_size == 0;
  if (!ok) {
    check.fail(ErrorKind::kInvalidArgument, arg, layouts(tokens, head_size), t.shape().to_string());
  }
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.data() == b.data() && a.shape() == b.shape() && a.strides() == b.strides();
}

}  // namespace

void check_rotary_operands(const ArgCheck& check, const Tensor& query, const Tensor& key,
                           std::int64_t head_size, std::int64_t rot_dim, RotaryTokens tokens,
                           const Tensor& query_out, const Tensor& key_out,
                           std::initializer_list<ArgCheck::Named> tables) {
  if (head_size <= 0) {
    check.fail(ErrorKind::kInvalidArgument, "head_size", "> 0", std::to_string(head_size));
  }
  check_heads(check, query, "query", head_size, tokens);
  if (present(key)) check_heads(check, key, "key", head_size, tokens);
  if (rot_dim < 2 || rot_dim % 2 != 0 || rot_dim > head_size) {
    check.fail(ErrorKind::kInvalidArgument, "rotary_dim",
               "even, >= 2 and <= head_size " + std::to_string(head_size), std::to_string(rot_dim));
  }
  if (!present(key) && present(key_out)) {
    check.fail(ErrorKind::kInvalidArgument, "key_out", "none when key is none",
               key_out.shape().to_string());
  }
  // In place, an output is its input's view; the hook sees them resolved, so name them by that.
  const std::string_view q_name = same_view(query_out, query) ? "query" : "query_out";
  const std::string_view k_name = same_view(key_out, key) ? "key" : "key_out";
  check.outputs_do_not_overlap(tables, {{query_out, q_name}}, false);
  if (present(key)) check.outputs_do_not_overlap(tables, {{key_out, k_name}}, false);
}

}  // namespace tileops::ops
