#include "tileops/runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tileops {
namespace {

TEST(ThreadPool, RunsEveryBlockExactlyOnce) {
  ThreadPool pool(4);
  for (std::int64_t n : {0, 1, 3, 4, 5, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    pool.parallel_for(n, [&](std::int64_t b) { hits[static_cast<std::size_t>(b)]++; });
    for (std::int64_t b = 0; b < n; ++b) EXPECT_EQ(hits[b].load(), 1) << "n=" << n;
  }
}

TEST(ThreadPool, ManyBackToBackLaunches) {
  ThreadPool pool(3);
  std::atomic<std::int64_t> sum{0};
  for (int i = 0; i < 20000; ++i) pool.parallel_for(3, [&](std::int64_t b) { sum += b + 1; });
  EXPECT_EQ(sum.load(), 20000 * 6);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(4);
  std::atomic<int> inner{0};
  pool.parallel_for(8, [&](std::int64_t) { pool.parallel_for(8, [&](std::int64_t) { inner++; }); });
  EXPECT_EQ(inner.load(), 64);
}

TEST(ThreadPool, ConcurrentCallersAreSafe) {
  ThreadPool pool(2);
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 500; ++i) pool.parallel_for(16, [&](std::int64_t) { total++; });
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 4 * 500 * 16);
}

TEST(ThreadPool, PropagatesTheFirstException) {
  ThreadPool pool(4);
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](std::int64_t b) {
                                   if (b == 37) throw std::runtime_error("block 37");
                                 }),
               std::runtime_error);
  std::atomic<int> after{0};
  pool.parallel_for(10, [&](std::int64_t) { after++; });  // still usable
  EXPECT_EQ(after.load(), 10);
}

TEST(ThreadPool, ParallelRangeCoversEverythingOnce) {
  ThreadPool pool(3);
  for (std::int64_t n : {1, 2, 7, 100, 12345}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    std::atomic<int> max_chunk{-1};
    pool.parallel_range(n, 10, [&](int chunk, std::int64_t begin, std::int64_t end) {
      int seen = max_chunk.load();
      while (chunk > seen && !max_chunk.compare_exchange_weak(seen, chunk)) {
      }
      for (std::int64_t i = begin; i < end; ++i) hits[static_cast<std::size_t>(i)]++;
    });
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1);
    EXPECT_LT(max_chunk.load(), pool.num_threads());
  }
}

TEST(ThreadPool, ParallelClaimRunsEveryItemOnce) {
  ThreadPool pool(3);
  for (std::int64_t n : {0, 1, 2, 5, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    std::atomic<int> bad_chunk{0};
    pool.parallel_claim(n, [&](int chunk, std::int64_t i) {
      if (chunk < 0 || chunk >= pool.num_threads()) bad_chunk++;
      hits[static_cast<std::size_t>(i)]++;
    });
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n;
    EXPECT_EQ(bad_chunk.load(), 0);
  }
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_ANY_THROW(ThreadPool pool(0)); }

}  // namespace
}  // namespace tileops
