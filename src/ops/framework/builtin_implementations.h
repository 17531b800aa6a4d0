// The explicit list of implementations compiled into this build (src/ops/*/register.cc).
#pragma once

#include <vector>

#include "tileops/ops/registry.h"

namespace tileops::ops {

void register_cpu_implementations(std::vector<Implementation>& out);

}  // namespace tileops::ops
