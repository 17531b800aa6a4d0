// scaled_softmax: everything is declared (scaled_softmax.decl.h); the typed function and class are
// generated.
#include "src/ops/contracts/scaled_softmax.decl.h"
#include "tileops/ops/declared_op.h"

namespace tileops::ops::contracts {

extern constinit const DeclaredOp scaled_softmax{decls::scaled_softmax};

}  // namespace tileops::ops::contracts
