// One registration function per CPU operator implementation file; register.cc lists them all.
#pragma once

#include <vector>

#include "tileops/ops/registry.h"

namespace tileops::ops::cpu {

void register_rms_norm(std::vector<Implementation>& out);
void register_add_rms_norm(std::vector<Implementation>& out);
void register_scaled_softmax(std::vector<Implementation>& out);
void register_causal_softmax(std::vector<Implementation>& out);

}  // namespace tileops::ops::cpu
