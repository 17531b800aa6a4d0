// mul on CPU: the broadcasting arithmetic operator (broadcast_arithmetic.h).
#include "src/ops/cpu/broadcast_arithmetic.h"
#include "src/ops/cpu/register.h"

namespace tileops::ops::cpu {

void register_mul(std::vector<Implementation>& out) {
  out.push_back({"mul", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return make_broadcast_arithmetic(p, Arithmetic::kMul); }});
}

}  // namespace tileops::ops::cpu
