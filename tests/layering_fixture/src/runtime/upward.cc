// Planted: runtime including the tile language.
#include "src/tl/jit/prepare.h"
