#include "tileops/runtime/workspace_pool.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "src/core/host_memory.h"
#include "tileops/core/error.h"

namespace tileops {

struct WorkspacePool::Arena {
  void* memory = nullptr;
  std::size_t bytes = 0;
  bool leased = false;
};

namespace {

// Arenas of kHugeMin bytes or more take huge pages (allocate_host): the float32 GEMM's packed B
// panel, A blocks and accumulators (9 MiB at 2048³ on AVX2), read tile by tile, then need a few
// TLB entries instead of thousands (bench/results/cpu-tuning.md).
constexpr std::size_t kHugeMin = std::size_t{4} << 20;

void* allocate(std::size_t bytes) { return allocate_host(bytes, kHugeMin, "workspace"); }

}  // namespace

WorkspacePool::Lease::Lease(Lease&& other) noexcept { *this = std::move(other); }

WorkspacePool::Lease& WorkspacePool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr) pool_->release(arena_);
    pool_ = std::exchange(other.pool_, nullptr);
    arena_ = std::exchange(other.arena_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

WorkspacePool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->release(arena_);
}

WorkspacePool::WorkspacePool() = default;

WorkspacePool::~WorkspacePool() {
  for (auto& [key, list] : arenas_) {
    for (auto& arena : list) std::free(arena->memory);
  }
}

WorkspacePool& WorkspacePool::global() {
  static WorkspacePool pool;
  return pool;
}

WorkspacePool::Lease WorkspacePool::acquire(Device device, const void* stream, int slot,
                                            std::size_t bytes) {
  if (device.type != DeviceType::kCpu) {
    throw Error(ErrorKind::kUnsupported,
                "workspace: device " + device.to_string() + " is not available in this build");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto& list = arenas_[Key{static_cast<int>(device.type), device.index, stream, slot}];
  Arena* chosen = nullptr;
  for (auto& arena : list) {
    if (arena->leased) continue;
    if (chosen == nullptr || (chosen->bytes < bytes && arena->bytes > chosen->bytes)) {
      chosen = arena.get();
    }
  }
  if (chosen == nullptr) {
    list.push_back(std::make_unique<Arena>());
    chosen = list.back().get();
  }
  if (chosen->bytes < bytes) {  // grow-only
    void* memory = allocate(bytes);
    std::free(chosen->memory);
    chosen->memory = memory;
    chosen->bytes = bytes;
  }
  chosen->leased = true;
  Lease lease;
  lease.pool_ = this;
  lease.arena_ = chosen;
  lease.data_ = chosen->memory;
  lease.bytes_ = chosen->bytes;
  return lease;
}

void WorkspacePool::release(Arena* arena) {
  std::lock_guard<std::mutex> lock(mutex_);
  arena->leased = false;
}

std::size_t WorkspacePool::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t total = 0;
  for (const auto& [key, list] : arenas_) {
    for (const auto& arena : list) total += arena->bytes;
  }
  return total;
}

}  // namespace tileops
