#include "src/ops/cpu/streaming.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "tileops/runtime/cpu_info.h"

namespace tileops::ops::cpu {
namespace {

std::atomic<std::int64_t>& threshold() {
  static std::atomic<std::int64_t> bytes{cpu_last_level_cache_bytes()};
  return bytes;
}

}  // namespace

bool stream_stores(std::int64_t working_set_bytes) {
  return working_set_bytes > threshold().load(std::memory_order_relaxed);
}

void zero_bytes(void* dst, std::size_t bytes, bool stream) {
  auto* p = static_cast<char*>(dst);
#if defined(__x86_64__) || defined(__i386__)
  if (stream) {
    const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(p) % 16) % 16);
    std::memset(p, 0, head);
    std::size_t i = head;
    for (; i + 16 <= bytes; i += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(p + i), _mm_setzero_si128());
    }
    std::memset(p + i, 0, bytes - i);
    end_streaming_stores();
    return;
  }
#endif
  (void)stream;
  std::memset(p, 0, bytes);
}

std::int64_t set_stream_threshold(std::int64_t bytes) {
  return threshold().exchange(bytes, std::memory_order_relaxed);
}

}  // namespace tileops::ops::cpu
