// The gated activations vLLM adds beside silu_and_mul: declared in <op>.decl.h with the split
// checks of gated_problem.h; the typed functions and classes are generated.
#include "src/ops/contracts/fatrelu_and_mul.decl.h"
#include "src/ops/contracts/gated_problem.h"
#include "src/ops/contracts/gelu_and_mul.decl.h"
#include "src/ops/contracts/gelu_tanh_and_mul.decl.h"
#include "src/ops/contracts/mul_and_silu.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops::contracts {

template <GatedArgs kArgs>
constexpr ContractHooks kGatedHooks{.check = check_gated_at<kArgs>,
                                    .output_shape = gated_output_shape_at<kArgs>,
                                    .check_reads_geometry_only = true};

extern constinit const DeclaredOp gelu_and_mul{decls::gelu_and_mul,
                                               kGatedHooks<gated_args(decls::gelu_and_mul)>};
extern constinit const DeclaredOp gelu_tanh_and_mul{
    decls::gelu_tanh_and_mul, kGatedHooks<gated_args(decls::gelu_tanh_and_mul)>};
extern constinit const DeclaredOp mul_and_silu{decls::mul_and_silu,
                                               kGatedHooks<gated_args(decls::mul_and_silu)>};
extern constinit const DeclaredOp fatrelu_and_mul{decls::fatrelu_and_mul,
                                                  kGatedHooks<gated_args(decls::fatrelu_and_mul)>};

}  // namespace tileops::ops::contracts
