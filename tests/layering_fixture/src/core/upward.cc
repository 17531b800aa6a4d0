// Planted: core including an operator.
#include "tileops/ops/add.h"
