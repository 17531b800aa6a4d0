// mul: everything is declared (mul.decl.h); the typed function and class are generated.
#include "src/ops/contracts/mul.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops::contracts {

extern constinit const DeclaredOp mul{decls::mul};

}  // namespace tileops::ops::contracts
