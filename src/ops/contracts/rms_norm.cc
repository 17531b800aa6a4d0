// rms_norm: everything is declared (rms_norm.decl.h); the typed function and class are generated.
#include "src/ops/contracts/rms_norm.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops::contracts {

extern constinit const DeclaredOp rms_norm{decls::rms_norm};

}  // namespace tileops::ops::contracts
