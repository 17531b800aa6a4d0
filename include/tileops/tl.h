// The tile language (SPEC_TL.md, docs/tile-language.md): kernels written as C++ callables,
// traced once per specialisation into an SSA IR, verified and run by a backend.
#pragma once

#include "tileops/tl/control.h"  // IWYU pragma: export
#include "tileops/tl/ir.h"       // IWYU pragma: export
#include "tileops/tl/jit.h"      // IWYU pragma: export
#include "tileops/tl/ops.h"      // IWYU pragma: export
#include "tileops/tl/value.h"    // IWYU pragma: export
