// Planted: the tile language including an operator internal.
#include "src/ops/cpu/streaming.h"
