#include "tileops/ops/rms_norm.h"

#include "src/ops/contracts/rms_norm.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops {

namespace contracts {
extern constinit const DeclaredOp rms_norm{decls::rms_norm};
}  // namespace contracts

void rms_norm(const Tensor& input, const Tensor& weight, double eps, const Tensor& out,
              const Context& ctx) {
  contracts::rms_norm.call({input, weight, out}, {eps}, ctx);
}

RmsNorm::RmsNorm(const Tensor& input, const Tensor& weight, double eps, const Tensor& out,
                 int implementation_index)
    : prepared_(contracts::rms_norm.prepare({input, weight, out}, {eps}, implementation_index)) {}

void RmsNorm::operator()(const Tensor& input, const Tensor& weight, const Tensor& out,
                         const Context& ctx) const {
  contracts::rms_norm.run(prepared_, {input, weight, out}, ctx);
}

}  // namespace tileops::ops
