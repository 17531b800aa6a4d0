// cast: declared (cast.decl.h) with the checks below it cannot state; the typed function and
// class are generated.
#include "src/ops/contracts/cast.decl.h"
#include "src/ops/framework/arg_check.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/cast.decl.h).
constexpr int kInput = tensor_index(decls::cast, "input");
constexpr int kOut = tensor_index(decls::cast, "out");

void check(const ArgCheck& check, std::span<const Tensor> tensors, std::span<double>) {
  check.rank_is(tensors[kOut], "out", tensors[kInput].rank());
  check.shape_is(tensors[kOut], "out", tensors[kInput].shape(), "same as input");
}

}  // namespace

namespace contracts {
extern constinit const DeclaredOp cast{decls::cast,
                                       {.check = check, .check_reads_geometry_only = true}};
}  // namespace contracts

}  // namespace tileops::ops
