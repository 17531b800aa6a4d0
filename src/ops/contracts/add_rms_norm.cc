// add_rms_norm: declared (add_rms_norm.decl.h); the typed function and class are generated. The
// in-place form omits the outputs, which the declaration writes into input and residual.
#include "tileops/ops/add_rms_norm.h"
#include "src/ops/contracts/add_rms_norm.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {

namespace contracts {
extern constinit const DeclaredOp add_rms_norm{decls::add_rms_norm};
}  // namespace contracts

void add_rms_norm_inplace(const Tensor& input, const Tensor& residual, const Tensor& weight,
                          double eps, const Context& ctx) {
  contracts::add_rms_norm.call({input, residual, weight, Tensor(), Tensor()}, {eps}, ctx);
}

}  // namespace tileops::ops
