// The copy kernel of ceilings.cc, for benchmarks that time it alongside their own work: on a
// shared machine the bandwidth drifts by ±15% from minute to minute, and alternating the two
// call by call cancels that drift out of their ratio.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace tileops::bench {

// memcpy of `bytes` from in to out, split over the global thread pool.
void copy_over_pool(const void* in, void* out, std::int64_t bytes);

// One copy of a 64 MiB buffer (allocated and touched on first use) over the pool; returns the
// bytes it moved (read + write).
double copy_64_mib();

struct Medians {
  double work_seconds = 0;
  double copy_seconds = 0;
  double copy_bytes = 0;
};

// Runs `work` and copy_64_mib alternately, once each per benchmark iteration, and returns the
// median time of each.
template <class Work>
Medians alternate_with_copy(benchmark::State& state, Work&& work) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> work_seconds, copy_seconds;
  double copy_bytes = copy_64_mib();  // allocates and touches the buffers outside the timing
  for (auto _ : state) {
    const auto t0 = Clock::now();
    work();
    const auto t1 = Clock::now();
    copy_bytes = copy_64_mib();
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    work_seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    copy_seconds.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  const auto median = [](std::vector<double>& v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(work_seconds), median(copy_seconds), copy_bytes};
}

}  // namespace tileops::bench
