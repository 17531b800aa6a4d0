// silu_and_mul: declared (silu_and_mul.decl.h) with the split checks of the gated activations
// (gated_problem.h); the typed function and class are generated.
#include "src/ops/contracts/gated_problem.h"
#include "src/ops/contracts/silu_and_mul.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops::contracts {

extern constinit const DeclaredOp silu_and_mul{
    decls::silu_and_mul,
    {.check = check_gated_at<gated_args(decls::silu_and_mul)>,
     .output_shape = gated_output_shape_at<gated_args(decls::silu_and_mul)>,
     .check_reads_geometry_only = true}};

}  // namespace tileops::ops::contracts
