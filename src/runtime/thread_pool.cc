#include "tileops/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "tileops/core/error.h"
#include "tileops/runtime/knobs.h"

namespace tileops {
namespace {

thread_local bool tl_inside_pool = false;

// Roughly 50-100 microseconds of polling before a worker goes to sleep.
constexpr int kSpinIterations = 20000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

int default_num_threads() {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::optional<std::string> text = knob("TILEOPS_NUM_THREADS");
  if (!text || text->empty()) return hardware;
  const char* env = text->c_str();
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end == '\0' && n >= 1 && n <= ThreadPool::kMaxThreads) return static_cast<int>(n);
  std::fprintf(stderr,
               "tileops: ignoring TILEOPS_NUM_THREADS=%s (expected a count in [1, %d]); using %d "
               "threads, one per hardware thread\n",
               env, ThreadPool::kMaxThreads, hardware);
  return hardware;
}

std::unique_ptr<ThreadPool>& global_pool() {
  static std::unique_ptr<ThreadPool> pool = std::make_unique<ThreadPool>(default_num_threads());
  return pool;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads < 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "ThreadPool: num_threads must be >= 1, got " + std::to_string(num_threads));
  }
  workers_.reserve(num_threads - 1);
  try {
    for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error& e) {
    const std::size_t started = workers_.size();
    shutdown();
    throw Error(ErrorKind::kOutOfMemory, "ThreadPool: could start only " +
                                             std::to_string(started + 1) + " of " +
                                             std::to_string(num_threads) + " threads: " + e.what());
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::shutdown() {
  stop_.store(true);
  work_.fetch_add(std::uint64_t{1} << 32);
  work_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

ThreadPool& ThreadPool::global() { return *global_pool(); }

void ThreadPool::set_global_num_threads(int num_threads) {
  if (num_threads == global().num_threads()) return;
  global_pool() = std::make_unique<ThreadPool>(num_threads);
}

void ThreadPool::worker_loop() {
  std::uint32_t seen = 0;
  while (true) {
    std::uint64_t w = work_.load();
    for (int spins = 0; static_cast<std::uint32_t>(w >> 32) == seen && spins < kSpinIterations;
         ++spins) {
      cpu_relax();
      w = work_.load();
    }
    if (static_cast<std::uint32_t>(w >> 32) == seen) {
      sleepers_.fetch_add(1);
      while (static_cast<std::uint32_t>(w >> 32) == seen) {
        work_.wait(w);
        w = work_.load();
      }
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = static_cast<std::uint32_t>(w >> 32);
    run_blocks(seen);
  }
}

void ThreadPool::run_blocks(std::uint32_t generation) {
  tl_inside_pool = true;
  while (true) {
    std::uint64_t w = work_.load(std::memory_order_acquire);
    if (static_cast<std::uint32_t>(w >> 32) != generation) break;
    const auto block = static_cast<std::int64_t>(w & 0xffffffffu);
    if (block >= num_blocks_.load(std::memory_order_relaxed)) break;
    if (!work_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
    // The launch cannot finish before this block is done, so fn_ is still the launch's.
    if (!failed_.load(std::memory_order_relaxed)) {
      try {
        (*fn_.load(std::memory_order_relaxed))(block);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true);
      }
    }
    done_.fetch_add(1, std::memory_order_release);
  }
  tl_inside_pool = false;
}

void ThreadPool::parallel_for(std::int64_t num_blocks, FunctionRef<void(std::int64_t)> fn) {
  if (num_blocks <= 0) return;
  std::unique_lock<std::mutex> lock(launch_mutex_, std::defer_lock);
  if (num_blocks == 1 || workers_.empty() || tl_inside_pool || !lock.try_lock()) {
    for (std::int64_t block = 0; block < num_blocks; ++block) fn(block);
    return;
  }
  constexpr std::int64_t kMaxBlocksPerLaunch = std::int64_t{1} << 31;
  for (std::int64_t first = 0; first < num_blocks; first += kMaxBlocksPerLaunch) {
    const std::int64_t count = std::min(kMaxBlocksPerLaunch, num_blocks - first);
    auto shifted = [&](std::int64_t block) { fn(first + block); };
    const FunctionRef<void(std::int64_t)> launch_fn(shifted);
    num_blocks_.store(count, std::memory_order_relaxed);
    fn_.store(&launch_fn, std::memory_order_relaxed);
    done_.store(0);
    failed_.store(false);
    error_ = nullptr;
    ++generation_;
    work_.store(static_cast<std::uint64_t>(generation_) << 32, std::memory_order_release);
    if (sleepers_.load() > 0) work_.notify_all();
    run_blocks(generation_);
    while (done_.load(std::memory_order_acquire) < count) cpu_relax();
    if (error_) std::rethrow_exception(error_);
  }
}

void ThreadPool::parallel_range(std::int64_t n, std::int64_t min_chunk,
                                FunctionRef<void(int, std::int64_t, std::int64_t)> fn) {
  if (n <= 0) return;
  min_chunk = std::max<std::int64_t>(min_chunk, 1);
  const std::int64_t max_chunks = (n + min_chunk - 1) / min_chunk;
  const std::int64_t chunks = std::min<std::int64_t>(num_threads(), max_chunks);
  parallel_for(chunks, [&](std::int64_t chunk) {
    const std::int64_t begin = n * chunk / chunks;
    const std::int64_t end = n * (chunk + 1) / chunks;
    fn(static_cast<int>(chunk), begin, end);
  });
}

void ThreadPool::parallel_claim(std::int64_t n, FunctionRef<void(int, std::int64_t)> fn) {
  std::atomic<std::int64_t> next{0};
  parallel_range(std::min<std::int64_t>(n, num_threads()), 1,
                 [&](int chunk, std::int64_t, std::int64_t) {
                   for (std::int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
                     fn(chunk, i);
                   }
                 });
}

}  // namespace tileops
