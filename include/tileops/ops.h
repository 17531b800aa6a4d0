// Every operator of tileops::ops.
#pragma once

#include "tileops/ops/add.h"
#include "tileops/ops/add_rms_norm.h"
#include "tileops/ops/cast.h"
#include "tileops/ops/cat.h"
#include "tileops/ops/causal_softmax.h"
#include "tileops/ops/embedding.h"
#include "tileops/ops/gemm.h"
#include "tileops/ops/linear.h"
#include "tileops/ops/matmul.h"
#include "tileops/ops/mul.h"
#include "tileops/ops/registry.h"
#include "tileops/ops/rms_norm.h"
#include "tileops/ops/scaled_softmax.h"
#include "tileops/ops/silu_and_mul.h"
#include "tileops/ops/swiglu.h"
