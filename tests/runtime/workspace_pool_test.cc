#include "tileops/runtime/workspace_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tileops/core/error.h"

namespace tileops {
namespace {

TEST(WorkspacePool, LeasesAreAlignedAndGrowOnly) {
  WorkspacePool pool;
  void* first = nullptr;
  {
    auto lease = pool.acquire(kCpu, nullptr, 0, 100);
    EXPECT_GE(lease.bytes(), 100u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(lease.data()) % 64, 0u);
    first = lease.data();
  }
  {
    auto lease = pool.acquire(kCpu, nullptr, 0, 50);  // reuses the released arena
    EXPECT_EQ(lease.data(), first);
  }
  {
    auto lease = pool.acquire(kCpu, nullptr, 0, 1 << 20);
    EXPECT_GE(lease.bytes(), std::size_t{1} << 20);
  }
  EXPECT_GE(pool.reserved_bytes(), std::size_t{1} << 20);
  auto small = pool.acquire(kCpu, nullptr, 0, 10);
  EXPECT_GE(small.bytes(), std::size_t{1} << 20) << "arenas never shrink";
}

// Arenas of 4 MiB or more start on a 2 MiB boundary (whole transparent huge pages); smaller
// ones keep the 64-byte alignment.
TEST(WorkspacePool, LargeArenasStartOnHugePageBoundaries) {
  WorkspacePool pool;
  auto small = pool.acquire(kCpu, nullptr, 0, (std::size_t{4} << 20) - 64);
  auto large = pool.acquire(kCpu, nullptr, 0, (std::size_t{4} << 20) + 100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % (std::uintptr_t{2} << 20), 0u);
  EXPECT_GE(large.bytes(), (std::size_t{4} << 20) + 100);
  std::memset(large.data(), 1, large.bytes());  // the whole lease is writable
}

TEST(WorkspacePool, ConcurrentLeasesNeverAlias) {
  WorkspacePool pool;
  auto a = pool.acquire(kCpu, nullptr, 0, 256);
  auto b = pool.acquire(kCpu, nullptr, 0, 256);
  EXPECT_NE(a.data(), b.data());
  auto other_slot = pool.acquire(kCpu, nullptr, 1, 256);
  EXPECT_NE(other_slot.data(), a.data());
}

TEST(WorkspacePool, ThreadSafe) {
  WorkspacePool pool;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        auto lease = pool.acquire(kCpu, nullptr, 0, 64 + (i % 7) * 100);
        std::memset(lease.data(), t, lease.bytes());
        const auto* p = lease.as<unsigned char>();
        for (std::size_t k = 0; k < lease.bytes(); k += 61) {
          if (p[k] != t) failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(WorkspacePool, RejectsDevicesThisBuildLacks) {
  WorkspacePool pool;
  try {
    pool.acquire(Device{DeviceType::kCuda, 0}, nullptr, 0, 16);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
}

// A size near SIZE_MAX (a wrapped or negative count cast to size_t) is out of memory, never an
// arena whose rounded-up allocation wrapped to 0 bytes.
TEST(WorkspacePool, RefusesSizesNoAllocationCanHold) {
  WorkspacePool pool;
  for (const std::size_t bytes :
       {SIZE_MAX, SIZE_MAX - 10, static_cast<std::size_t>(PTRDIFF_MAX) + 1}) {
    try {
      pool.acquire(kCpu, nullptr, 0, bytes);
      ADD_FAILURE() << "no error for " << bytes << " bytes";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory) << e.what();
    }
  }
  EXPECT_EQ(pool.reserved_bytes(), 0u);
}

}  // namespace
}  // namespace tileops
