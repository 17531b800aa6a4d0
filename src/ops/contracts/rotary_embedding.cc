// rotary_embedding's contract beyond its declaration (rotary_embedding.decl.h); the typed
// function and class are generated, the overload without rotary_dim and outputs is here.
#include "tileops/ops/rotary_embedding.h"

#include <string>

#include "src/ops/contracts/rotary_embedding.decl.h"
#include "src/ops/contracts/rotary_problem.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr const OpDecl& kDecl = decls::rotary_embedding;

// rotary_dim is resolved here. The positions' values are data: the implementation checks them
// against max_pos before writing anything.
void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attrs) {
  const Tensor& positions = t[tensor_index(kDecl, "positions")];
  const Tensor& cache = t[tensor_index(kDecl, "cos_sin_cache")];
  const std::int64_t rot_dim = cache.size(1);
  double& rotary_dim_attr = attrs[attribute_index(kDecl, "rotary_dim")];
  const auto rotary_dim = int64_attribute(rotary_dim_attr);
  if (rotary_dim > 0 && rotary_dim != rot_dim) {
    check.fail(ErrorKind::kInvalidArgument, "rotary_dim",
               "<= 0 or cos_sin_cache.shape[1] = " + std::to_string(rot_dim),
               std::to_string(rotary_dim));
  }
  if (cache.size(0) == 0 && positions.numel() > 0) {
    check.fail(ErrorKind::kInvalidArgument, "cos_sin_cache", "at least one position (row)",
               cache.shape().to_string());
  }
  // positions [num_tokens] or vLLM's [batch, seq] (any rank >= 1): query and key lead with it.
  check_rotary_operands(check, t[tensor_index(kDecl, "query")], t[tensor_index(kDecl, "key")],
                        int64_attribute(attrs[attribute_index(kDecl, "head_size")]), rot_dim,
                        {positions.shape(), "positions' shape"},
                        t[tensor_index(kDecl, "query_out")], t[tensor_index(kDecl, "key_out")],
                        {{positions, "positions"}, {cache, "cos_sin_cache"}});
  rotary_dim_attr = static_cast<double>(rot_dim);
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp rotary_embedding{decls::rotary_embedding, {check}};
}  // namespace contracts

void rotary_embedding(const Tensor& positions, const Tensor& query, const Tensor& key,
                      std::int64_t head_size, const Tensor& cos_sin_cache, bool is_neox_style,
                      const Context& ctx) {
  rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style, 0, Tensor(),
                   Tensor(), ctx);
}

}  // namespace tileops::ops
