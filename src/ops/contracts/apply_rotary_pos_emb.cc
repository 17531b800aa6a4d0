#include "tileops/ops/apply_rotary_pos_emb.h"

#include <string>

#include "src/ops/contracts/rotary_problem.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "apply_rotary_pos_emb";

void check_memory(const Tensor& query, const Tensor& key, const Tensor& cos, const Tensor& sin,
                  const Tensor& query_out, const Tensor& key_out, RotaryOutputNames names = {}) {
  check_rotary_memory(ArgCheck(kOp), query, key, {{cos, "cos"}, {sin, "sin"}}, query_out, key_out,
                      names);
}

Problem make_problem(const Tensor& query, const Tensor& key, const Tensor& cos, const Tensor& sin,
                     std::int64_t head_size, bool is_neox_style, const Tensor& query_out,
                     const Tensor& key_out, RotaryOutputNames names = {}) {
  const ArgCheck check(kOp);
  check.usable(cos, "cos");
  check.usable(sin, "sin");
  check.standard_float(cos, "cos");
  check.standard_float(sin, "sin");
  check.rank_is(cos, "cos", 2);
  check.shape_is(sin, "sin", cos.shape(), "same as cos");
  // c == head_size: per-element tables; 2c <= head_size: per-frequency halves, rot_dim = 2c.
  const std::int64_t c = cos.size(1);
  const bool per_element = c == head_size;
  if (head_size > 0 && !per_element && (c < 1 || 2 * c > head_size)) {
    check.fail(ErrorKind::kInvalidArgument, "cos",
               "last dim head_size " + std::to_string(head_size) +
                   " (per-element tables) or rotary_dim/2 <= head_size/2 (per frequency)",
               cos.shape().to_string());
  }
  const std::int64_t rot_dim = per_element ? c : 2 * c;
  check_rotary_operands(check, query, key, head_size, rot_dim, cos.size(0), query_out, key_out,
                        names);
  check_memory(query, key, cos, sin, query_out, key_out, names);
  return Problem{kOp,
                 {TensorDesc::of(query), present(key) ? TensorDesc::of(key) : TensorDesc::absent(),
                  TensorDesc::of(cos), TensorDesc::of(sin), TensorDesc::of(query_out),
                  present(key_out) ? TensorDesc::of(key_out) : TensorDesc::absent()},
                 {static_cast<double>(head_size), is_neox_style ? 1.0 : 0.0,
                  static_cast<double>(rot_dim), per_element ? 1.0 : 0.0}};
}

}  // namespace

void apply_rotary_pos_emb(const Tensor& query, const Tensor& key, const Tensor& cos,
                          const Tensor& sin, std::int64_t head_size, bool is_neox_style,
                          const Tensor& query_out, const Tensor& key_out, const Context& ctx) {
  const Tensor& q_out = output_or_input(query_out, query);
  const Tensor& k_out = output_or_input(key_out, key);
  const RotaryOutputNames names{present(query_out) ? "query_out" : "query",
                                present(key_out) ? "key_out" : "key"};
  const Tensor tensors[] = {query, key, cos, sin, q_out, k_out};
  run_problem(make_problem(query, key, cos, sin, head_size, is_neox_style, q_out, k_out, names),
              tensors, ctx);
}

ApplyRotaryPosEmb::ApplyRotaryPosEmb(const Tensor& query, const Tensor& key, const Tensor& cos,
                                     const Tensor& sin, std::int64_t head_size, bool is_neox_style,
                                     const Tensor& query_out, const Tensor& key_out,
                                     int implementation_index)
    : prepared_(make_problem(query, key, cos, sin, head_size, is_neox_style, query_out, key_out),
                {"query", "key", "cos", "sin", "query_out", "key_out"}, implementation_index) {}

void ApplyRotaryPosEmb::operator()(const Tensor& query, const Tensor& key, const Tensor& cos,
                                   const Tensor& sin, const Tensor& query_out,
                                   const Tensor& key_out, const Context& ctx) const {
  check_memory(query, key, cos, sin, query_out, key_out);
  const Tensor tensors[] = {query, key, cos, sin, query_out, key_out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
