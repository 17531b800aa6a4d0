// The GEMM engines compiled into this build, in implementation-index order: 0 "native" always,
// 1 "onednn" when oneDNN was found at build time, 2 "tl" (the tile-language kernel of
// src/ops/cpu/tl/) always. gemm, matmul and linear register one
// implementation per engine.
#pragma once

#include <span>

#include "src/ops/cpu/gemm/gemm_call.h"

namespace tileops::ops::cpu {

struct GemmEngineInfo {
  int index;
  const char* name;
  GemmEngine run;
  bool parallel_batches;  // false: the engine brings its own threads
};

std::span<const GemmEngineInfo> gemm_engines();

}  // namespace tileops::ops::cpu
