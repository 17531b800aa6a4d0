// add: everything is declared (add.decl.h); the typed function and class are generated.
#include "src/ops/contracts/add.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops::contracts {

extern constinit const DeclaredOp add{decls::add};

}  // namespace tileops::ops::contracts
