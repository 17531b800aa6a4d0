// WorkspacePool: grow-only scratch arenas per (device, stream, slot). Operators lease an arena
// for the duration of one call; concurrent callers on the same key get distinct arenas, so
// leases never alias. Arenas are kept for reuse (grow-only) until the pool is destroyed.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "tileops/core/device.h"

namespace tileops {

class WorkspacePool {
 public:
  struct Arena;

  // RAII lease of one arena of at least the requested size (64-byte aligned).
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }
    template <typename T>
    T* as() const {
      return static_cast<T*>(data_);
    }

   private:
    friend class WorkspacePool;
    WorkspacePool* pool_ = nullptr;
    Arena* arena_ = nullptr;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
  };

  WorkspacePool();
  ~WorkspacePool();
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  static WorkspacePool& global();

  Lease acquire(Device device, const void* stream, int slot, std::size_t bytes);
  // Bytes currently held by all arenas (leased or not).
  std::size_t reserved_bytes() const;

 private:
  void release(Arena* arena);

  using Key = std::tuple<int, int, const void*, int>;
  mutable std::mutex mutex_;
  std::map<Key, std::vector<std::unique_ptr<Arena>>> arenas_;
};

}  // namespace tileops
