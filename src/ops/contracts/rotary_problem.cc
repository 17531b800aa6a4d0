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

// Elements [0, span) of each row of t, rows at stride t.stride(0) (t has rank >= 2).
std::int64_t row_span(const Tensor& t) {
  std::int64_t span = 1;
  for (int i = 1; i < t.rank(); ++i) span += (t.size(i) - 1) * t.stride(i);
  return span;
}

}  // namespace

bool rows_apart(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return true;
  const auto* pa = static_cast<const char*>(a.data());
  const auto* pb = static_cast<const char*>(b.data());
  const auto last = [](const Tensor& t) {
    std::int64_t offset = 0;
    for (int i = 0; i < t.rank(); ++i) offset += (t.size(i) - 1) * t.stride(i);
    return (offset + 1) * static_cast<std::int64_t>(t.element_size());
  };
  if (pa + last(a) <= pb || pb + last(b) <= pa) return true;  // byte ranges apart
  // Rows of one buffer: a's rows cover [0, span_a) of every period of the row stride s, b's
  // start r elements into it; they never meet when b's part fits in [span_a, s).
  const auto size = static_cast<std::int64_t>(a.element_size());
  const std::int64_t s = a.rank() >= 2 ? a.stride(0) : 0;
  if (b.element_size() != a.element_size() || a.rank() < 2 || b.rank() < 2 || s <= 0 ||
      b.stride(0) != s || (pb - pa) % size != 0) {
    return false;
  }
  const std::int64_t r = (((pb - pa) / size) % s + s) % s;
  return r >= row_span(a) && r + row_span(b) <= s;
}

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
  // their rows interleave, so these pairs are checked element-exactly rather than by range.
  const auto apart = [&](const Tensor& out, std::string_view out_name, const Tensor& other,
                         std::string_view other_name) {
    if (!rows_apart(out, other)) {
      check.fail(ErrorKind::kInvalidArgument, out_name,
                 "memory apart from '" + std::string(other_name) + "'",
                 "an overlapping view " + out.describe());
    }
  };
  apart(query_out, names.query_out, key, "key");
  apart(key_out, names.key_out, query, "query");
  apart(key_out, names.key_out, query_out, names.query_out);
}

}  // namespace tileops::ops
