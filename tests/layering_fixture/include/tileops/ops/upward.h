// Planted: a public header including the implementation.
#pragma once
#include "src/ops/framework/arg_check.h"
