// apply_rotary_pos_emb's contract beyond its declaration (apply_rotary_pos_emb.decl.h); the
// typed function and class are generated.
#include <string>

#include "src/ops/contracts/apply_rotary_pos_emb.decl.h"
#include "src/ops/contracts/rotary_problem.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

constexpr const OpDecl& kDecl = decls::apply_rotary_pos_emb;

// Derives {rot_dim, per_element}.
void check(const ArgCheck& check, std::span<const Tensor> t, std::span<double> attrs) {
  const Tensor& cos = t[tensor_index(kDecl, "cos")];
  const auto head_size = int64_attribute(attrs[attribute_index(kDecl, "head_size")]);
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
  const Dims rows{cos.size(0)};
  check_rotary_operands(check, t[tensor_index(kDecl, "query")], t[tensor_index(kDecl, "key")],
                        head_size, rot_dim, {rows, "cos's rows"},
                        t[tensor_index(kDecl, "query_out")], t[tensor_index(kDecl, "key_out")],
                        {{cos, "cos"}, {t[tensor_index(kDecl, "sin")], "sin"}});
  attrs[derived_attribute_index(kDecl, 0)] = static_cast<double>(rot_dim);
  attrs[derived_attribute_index(kDecl, 1)] = per_element ? 1.0 : 0.0;
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp apply_rotary_pos_emb{decls::apply_rotary_pos_emb, {check}};
}  // namespace contracts

}  // namespace tileops::ops
