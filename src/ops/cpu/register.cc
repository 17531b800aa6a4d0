#include "src/ops/cpu/register.h"

#include "src/ops/framework/builtin_implementations.h"

namespace tileops::ops {

void register_cpu_implementations(std::vector<Implementation>& out) {
  cpu::register_rms_norm(out);
  cpu::register_add_rms_norm(out);
  cpu::register_scaled_softmax(out);
  cpu::register_causal_softmax(out);
}

}  // namespace tileops::ops
