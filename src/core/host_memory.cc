#include "src/core/host_memory.h"

#include <cstdint>
#include <cstdlib>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "tileops/core/error.h"

namespace tileops {

void* allocate_host(std::size_t bytes, std::size_t huge_min, std::string_view what) {
  constexpr std::size_t kAlignment = 64;
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  // Beyond PTRDIFF_MAX no allocation can succeed, and rounding up could wrap to 0: a size that
  // large is a wrapped or hostile computation, refused before the round-up.
  constexpr auto kMaxBytes = static_cast<std::size_t>(PTRDIFF_MAX) / kHugePage * kHugePage;
  const std::size_t alignment = bytes >= huge_min ? kHugePage : kAlignment;
  void* p = nullptr;
  if (bytes <= kMaxBytes) {
    const std::size_t rounded =
        bytes == 0 ? kAlignment : (bytes + alignment - 1) / alignment * alignment;
    p = std::aligned_alloc(alignment, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p != nullptr && alignment == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  }
  if (p == nullptr) {
    throw Error(ErrorKind::kOutOfMemory,
                std::string(what) + ": cannot allocate " + std::to_string(bytes) + " bytes");
  }
  return p;
}

}  // namespace tileops
