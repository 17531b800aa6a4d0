// ThreadPool: persistent workers that run the blocks of a launch across cores. The calling
// thread takes part. Workers spin briefly after a launch before sleeping, so back-to-back
// launches wake in well under a microsecond. Nested calls (from inside a block) and calls made
// while another thread holds the pool run serially on the caller: never oversubscribed, never
// deadlocked.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tileops/runtime/function_ref.h"

namespace tileops {

class ThreadPool {
 public:
  // Far beyond any machine: a larger count is a mistake (an uninitialised int, a typo).
  static constexpr int kMaxThreads = 4096;

  // `num_threads` counts the caller; 1 means everything runs inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool: TILEOPS_NUM_THREADS threads (a count in [1, kMaxThreads]; anything
  // else is ignored with a one-line notice on stderr), else one per hardware thread.
  static ThreadPool& global();
  // Replaces the global pool's workers; must not race with launches on it.
  static void set_global_num_threads(int num_threads);

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(block) for every block in [0, num_blocks), in parallel. The first exception thrown
  // by a block is rethrown here after all blocks finished or were abandoned.
  void parallel_for(std::int64_t num_blocks, FunctionRef<void(std::int64_t)> fn);

  // Splits [0, n) into at most num_threads() contiguous ranges of at least `min_chunk` items
  // and calls fn(chunk, begin, end) for each; chunk < num_threads() indexes per-chunk scratch.
  void parallel_range(std::int64_t n, std::int64_t min_chunk,
                      FunctionRef<void(int, std::int64_t, std::int64_t)> fn);

  // Calls fn(chunk, item) for every item in [0, n), the items claimed one at a time by up to
  // num_threads() threads (uneven items, or a thread slowed by other work on the machine, even
  // out); chunk < num_threads() indexes per-thread scratch.
  void parallel_claim(std::int64_t n, FunctionRef<void(int, std::int64_t)> fn);

 private:
  void worker_loop();
  void shutdown();  // stops and joins every worker
  // Claims and runs blocks of launch `generation` until none are left.
  void run_blocks(std::uint32_t generation);

  std::vector<std::thread> workers_;
  std::mutex launch_mutex_;
  // (generation << 32) | next unclaimed block: claiming is one CAS that fails for a worker
  // still holding an old generation, so late workers never touch a finished launch and the
  // caller never waits for workers that had no block.
  std::atomic<std::uint64_t> work_{0};
  std::uint32_t generation_ = 0;  // guarded by launch_mutex_
  std::atomic<std::int64_t> num_blocks_{0};
  std::atomic<const FunctionRef<void(std::int64_t)>*> fn_{nullptr};
  std::atomic<std::int64_t> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace tileops
