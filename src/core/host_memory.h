// Host memory for tensors and workspace arenas (internal to the library).
#pragma once

#include <cstddef>
#include <string_view>

namespace tileops {

// At least `bytes` (one cache line when 0), 64-byte aligned; from `huge_min` bytes on, 2 MiB
// aligned, rounded up to whole 2 MiB pages and marked for Linux's transparent huge pages (whose
// default policy, "madvise", gives them only when asked): a large buffer read tile by tile then
// needs one TLB entry per 2 MiB instead of per 4 KiB (bench/results/cpu-tuning.md). Freed with
// std::free. Throws kOutOfMemory naming `what` when the allocation fails or could never succeed.
void* allocate_host(std::size_t bytes, std::size_t huge_min, std::string_view what);

}  // namespace tileops
