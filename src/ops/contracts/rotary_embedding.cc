#include "tileops/ops/rotary_embedding.h"

#include <string>

#include "src/ops/contracts/rotary_problem.h"

namespace tileops::ops {
namespace {

constexpr std::string_view kOp = "rotary_embedding";

void check_memory(const Tensor& positions, const Tensor& query, const Tensor& key,
                  const Tensor& cache, const Tensor& query_out, const Tensor& key_out,
                  RotaryOutputNames names = {}) {
  check_rotary_memory(ArgCheck(kOp), query, key,
                      {{positions, "positions"}, {cache, "cos_sin_cache"}}, query_out, key_out,
                      names);
}

// The positions' values are data: the implementation checks them against max_pos before
// writing anything.
Problem make_problem(const Tensor& positions, const Tensor& query, const Tensor& key,
                     std::int64_t head_size, const Tensor& cache, bool is_neox_style,
                     std::int64_t rotary_dim, const Tensor& query_out, const Tensor& key_out,
                     RotaryOutputNames names = {}) {
  const ArgCheck check(kOp);
  check.usable(positions, "positions");
  check.dtype_in(positions, "positions", {DataType::kInt32, DataType::kInt64});
  check.rank_is(positions, "positions", 1);
  check.usable(cache, "cos_sin_cache");
  check.standard_float(cache, "cos_sin_cache");
  check.rank_is(cache, "cos_sin_cache", 2);
  const std::int64_t rot_dim = cache.size(1);
  if (rotary_dim > 0 && rotary_dim != rot_dim) {
    check.fail(ErrorKind::kInvalidArgument, "rotary_dim",
               "<= 0 or cos_sin_cache.shape[1] = " + std::to_string(rot_dim),
               std::to_string(rotary_dim));
  }
  if (cache.size(0) == 0 && positions.size(0) > 0) {
    check.fail(ErrorKind::kInvalidArgument, "cos_sin_cache", "at least one position (row)",
               cache.shape().to_string());
  }
  check_rotary_operands(check, query, key, head_size, rot_dim, positions.size(0), query_out,
                        key_out, names);
  check_memory(positions, query, key, cache, query_out, key_out, names);
  return Problem{
      kOp,
      {TensorDesc::of(positions), TensorDesc::of(query),
       present(key) ? TensorDesc::of(key) : TensorDesc::absent(), TensorDesc::of(cache),
       TensorDesc::of(query_out),
       present(key_out) ? TensorDesc::of(key_out) : TensorDesc::absent()},
      {static_cast<double>(head_size), is_neox_style ? 1.0 : 0.0, static_cast<double>(rot_dim)}};
}

}  // namespace

void rotary_embedding(const Tensor& positions, const Tensor& query, const Tensor& key,
                      std::int64_t head_size, const Tensor& cos_sin_cache, bool is_neox_style,
                      std::int64_t rotary_dim, const Tensor& query_out, const Tensor& key_out,
                      const Context& ctx) {
  const Tensor& q_out = output_or_input(query_out, query);
  const Tensor& k_out = output_or_input(key_out, key);
  const RotaryOutputNames names{present(query_out) ? "query_out" : "query",
                                present(key_out) ? "key_out" : "key"};
  const Tensor tensors[] = {positions, query, key, cos_sin_cache, q_out, k_out};
  run_problem(make_problem(positions, query, key, head_size, cos_sin_cache, is_neox_style,
                           rotary_dim, q_out, k_out, names),
              tensors, ctx);
}

void rotary_embedding(const Tensor& positions, const Tensor& query, const Tensor& key,
                      std::int64_t head_size, const Tensor& cos_sin_cache, bool is_neox_style,
                      const Context& ctx) {
  rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style, 0, Tensor(),
                   Tensor(), ctx);
}

RotaryEmbedding::RotaryEmbedding(const Tensor& positions, const Tensor& query, const Tensor& key,
                                 std::int64_t head_size, const Tensor& cos_sin_cache,
                                 bool is_neox_style, std::int64_t rotary_dim,
                                 const Tensor& query_out, const Tensor& key_out,
                                 int implementation_index)
    : prepared_(make_problem(positions, query, key, head_size, cos_sin_cache, is_neox_style,
                             rotary_dim, query_out, key_out),
                {"positions", "query", "key", "cos_sin_cache", "query_out", "key_out"},
                implementation_index) {}

void RotaryEmbedding::operator()(const Tensor& positions, const Tensor& query, const Tensor& key,
                                 const Tensor& cos_sin_cache, const Tensor& query_out,
                                 const Tensor& key_out, const Context& ctx) const {
  check_memory(positions, query, key, cos_sin_cache, query_out, key_out);
  const Tensor tensors[] = {positions, query, key, cos_sin_cache, query_out, key_out};
  prepared_.run(tensors, ctx);
}

}  // namespace tileops::ops
