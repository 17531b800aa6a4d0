// Streaming (non-temporal) stores for outputs too large to stay in the last-level cache. An
// ordinary store first reads the line it writes (read-for-ownership), so an operator writing one
// byte per byte read moves 3 bytes per 2; a streaming store writes whole lines without reading
// them, as glibc's memcpy does for large copies. Calls whose data fit in the cache keep ordinary
// stores: the consumer of their output finds it there.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tileops/core/tensor.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tileops::ops::cpu {

// Whether a call that reads and writes `working_set_bytes` in all should write its output with
// streaming stores: when they exceed the last-level cache (sysconf; 32 MiB when unknown), which
// then cannot keep the output for its consumer anyway.
bool stream_stores(std::int64_t working_set_bytes);
// Sets the threshold (tests use a small one to reach the streaming paths quickly); returns
// the previous one.
std::int64_t set_stream_threshold(std::int64_t bytes);
// For a call whose operands are `operands` tensors of out's size, out included.
inline bool stream_stores(const Tensor& out, int operands) {
  // out's bytes fit in int64 (a Tensor's do); `operands` times them may not: saturate.
  const std::int64_t bytes = out.numel() * static_cast<std::int64_t>(out.element_size());
  return stream_stores(bytes > INT64_MAX / operands ? INT64_MAX : operands * bytes);
}

// memset(dst, 0, bytes), with streaming stores when `stream` (and fenced).
void zero_bytes(void* dst, std::size_t bytes, bool stream);

// Orders a kernel's streaming stores before whatever the thread does next (they are weakly
// ordered on x86): a kernel that streamed calls it before it returns, so the pool's completion
// signal publishes the data.
inline void end_streaming_stores() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_sfence();
#endif
}

}  // namespace tileops::ops::cpu
