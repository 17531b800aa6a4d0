// swiglu: everything is declared (swiglu.decl.h); the typed function and class are generated.
#include "src/ops/contracts/swiglu.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops::contracts {

extern constinit const DeclaredOp swiglu{decls::swiglu};

}  // namespace tileops::ops::contracts
