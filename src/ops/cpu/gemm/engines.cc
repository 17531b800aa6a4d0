#include "src/ops/cpu/gemm/engines.h"

namespace tileops::ops::cpu {

#ifdef TILEOPS_HAVE_ONEDNN
void onednn_gemm(const GemmCall& call, const Context& ctx);
#endif
void tl_gemm(const GemmCall& call, const Context& ctx);  // src/ops/cpu/tl/gemm.cc

std::span<const GemmEngineInfo> gemm_engines() {
  static const GemmEngineInfo engines[] = {
      {0, "native", &native_gemm, true},
#ifdef TILEOPS_HAVE_ONEDNN
      {1, "onednn", &onednn_gemm, false},
#endif
      {2, "tl", &tl_gemm, false},
  };
  return engines;
}

}  // namespace tileops::ops::cpu
