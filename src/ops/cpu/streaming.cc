#include "src/ops/cpu/streaming.h"

#include <unistd.h>

#include <atomic>

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

std::atomic<std::int64_t>& threshold() {
  static std::atomic<std::int64_t> bytes{last_level_cache_bytes() / 4 * 3};
  return bytes;
}

}  // namespace

bool stream_stores(std::int64_t bytes) {
  return bytes >= threshold().load(std::memory_order_relaxed);
}

std::int64_t set_stream_threshold(std::int64_t bytes) {
  return threshold().exchange(bytes, std::memory_order_relaxed);
}

}  // namespace tileops::ops::cpu
