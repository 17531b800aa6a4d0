#include "src/ops/contracts/rotary_problem.h"

#include <string>

namespace tileops::ops {
namespace {

void check_heads(const ArgCheck& check, const Tensor& t, std::string_view arg,
                 std::int64_t head_size, std::int64_t tokens) {
  if (t.rank() != 2 && t.rank() != 3) {
    check.fail(ErrorKind::kInvalidArgument, arg, "rank 2 [T, H*head_size] or 3 [T, H, head_size]",
               t.shape().to_string());
  }
  if (t.size(0) != tokens) {
    check.fail(ErrorKind::kInvalidArgument, arg,
               std::to_string(tokens) + " tokens in dim 0 (the rows of positions / cos)",
               t.shape().to_string());
  }
  const bool whole_heads = t.rank() == 3 ? t.size(2) == head_size : t.size(1) % head_size == 0;
  if (!whole_heads) {
    check.fail(ErrorKind::kInvalidArgument, arg,
               t.rank() == 3 ? "last dim == head_size " + std::to_string(head_size)
                             : "last dim a multiple of head_size " + std::to_string(head_size),
               t.shape().to_string());
  }
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.data() == b.data() && a.shape() == b.shape() && a.strides() == b.strides();
}

}  // namespace

void check_rotary_operands(const ArgCheck& check, const Tensor& query, const Tensor& key,
                           std::int64_t head_size, std::int64_t rot_dim, std::int64_t tokens,
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
