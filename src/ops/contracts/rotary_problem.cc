#include "src/ops/contracts/rotary_problem.h"

#include <string>

namespace tileops::ops {
namespace {

void check_heads(const ArgCheck& check, const Tensor& t, std::string_view arg,
                 std::int64_t head_size, std::int64_t tokens) {
  check.usable(t, arg);
  check.standard_float(t, arg);
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

void check_output(const ArgCheck& check, const Tensor& out, std::string_view arg,
                  const Tensor& input, std::string_view input_arg) {
  check.usable(out, arg);
  check.dtype_is(out, arg, input.dtype(), "same as " + std::string(input_arg));
  check.shape_is(out, arg, input.shape(), "same as " + std::string(input_arg));
  check.writable(out, arg);
}

}  // namespace

void check_rotary_operands(const ArgCheck& check, const Tensor& query, const Tensor& key,
                           std::int64_t head_size, std::int64_t rot_dim, std::int64_t tokens,
                           const Tensor& query_out, const Tensor& key_out,
                           RotaryOutputNames names) {
  if (head_size <= 0) {
    check.fail(ErrorKind::kInvalidArgument, "head_size", "> 0", std::to_string(head_size));
  }
  check_heads(check, query, "query", head_size, tokens);
  if (present(key)) {
    check_heads(check, key, "key", head_size, tokens);
    check.dtype_is(key, "key", query.dtype(), "same as query");
  }
  if (rot_dim < 2 || rot_dim % 2 != 0 || rot_dim > head_size) {
    check.fail(ErrorKind::kInvalidArgument, "rotary_dim",
               "even, >= 2 and <= head_size " + std::to_string(head_size), std::to_string(rot_dim));
  }
  check_output(check, query_out, names.query_out, query, "query");
  if (present(key)) {
    if (!present(key_out)) {
      check.fail(ErrorKind::kInvalidArgument, names.key_out, "a tensor when key is given", "none");
    }
    check_output(check, key_out, names.key_out, key, "key");
  } else if (present(key_out)) {
    check.fail(ErrorKind::kInvalidArgument, names.key_out, "none when key is none",
               key_out.shape().to_string());
  }
}

void check_rotary_memory(const ArgCheck& check, const Tensor& query, const Tensor& key,
                         std::initializer_list<ArgCheck::Named> tables, const Tensor& query_out,
                         const Tensor& key_out, RotaryOutputNames names) {
  check.outputs_do_not_overlap(tables, {{query_out, names.query_out}}, false);
  check.outputs_do_not_overlap({{query, "query"}}, {{query_out, names.query_out}});
  if (!present(key)) return;
  check.outputs_do_not_overlap(tables, {{key_out, names.key_out}}, false);
  check.outputs_do_not_overlap({{key, "key"}}, {{key_out, names.key_out}});
  // query and key are often views of one fused QKV buffer (vLLM rotates them in place there):
  // their rows interleave without sharing an element, which the overlap check tells apart.
  check.outputs_do_not_overlap({{key, "key"}}, {{query_out, names.query_out}}, false);
  check.outputs_do_not_overlap({{query, "query"}}, {{key_out, names.key_out}}, false);
  check.outputs_do_not_overlap({}, {{query_out, names.query_out}, {key_out, names.key_out}}, false);
}

}  // namespace tileops::ops
