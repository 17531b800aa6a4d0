// `tileops env`: the build, the CPU as the kernels see it, and every registered implementation.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tileops/ops/registry.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/thread_pool.h"
#include "tools/cli/commands.h"

namespace tileops::cli {

int run_env(int argc, char** argv) {
  if (argc > 0) {
    std::fprintf(stderr, "tileops env: unknown option '%s' (env takes none)\n", argv[0]);
    return 2;
  }
  std::printf("tileops %s\n", version());
  std::string targets;
  for (const std::string& t : cpu_simd_targets()) targets += (targets.empty() ? "" : " ") + t;
  std::printf(
      "cpu: SIMD targets %s (dispatching to %s), %d threads (TILEOPS_NUM_THREADS sets "
      "the count)\n",
      targets.c_str(), cpu_best_simd_target().c_str(), ThreadPool::global().num_threads());
  const char* amx = std::getenv("TILEOPS_AMX");
  std::printf("cpu: AMX-BF16 %s\n",
              !cpu_amx_bf16() ? "absent (bfloat16 matrix products use the SIMD targets)"
              : amx != nullptr && std::strcmp(amx, "0") == 0
                  ? "present, turned off by TILEOPS_AMX=0"
                  : "in use for bfloat16 matrix products (TILEOPS_AMX=0 turns it off)");
  std::printf("cuda: not built\n");
  int width = 8;  // the longest operator name
  for (const std::string& op : ops::registered_operators()) {
    width = std::max(width, static_cast<int>(op.size()));
  }
  std::printf("\n%-*s %-6s %s\n", width, "operator", "device", "implementations (index: name)");
  for (const std::string& op : ops::registered_operators()) {
    const auto indices = ops::active_implementation_indices(op, DeviceType::kCpu);
    const auto names = ops::active_implementation_names(op, DeviceType::kCpu);
    std::string list;
    for (std::size_t i = 0; i < indices.size(); ++i) {
      list += (i ? ", " : "") + std::to_string(indices[i]) + ": " + names[i];
    }
    std::printf("%-*s %-6s %s\n", width, op.c_str(), "cpu", list.c_str());
  }
  return 0;
}

}  // namespace tileops::cli
