#include "src/ops/cpu/streaming.h"

#include <unistd.h>

namespace tileops::ops::cpu {
namespace {

std::int64_t last_level_cache_bytes() {
  long bytes = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  return bytes > 0 ? bytes : std::int64_t{32} << 20;
}

}  // namespace

bool stream_stores(std::int64_t bytes) {
  static const std::int64_t threshold = last_level_cache_bytes() / 4 * 3;
  return bytes >= threshold;
}

}  // namespace tileops::ops::cpu
