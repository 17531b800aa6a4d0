// The copy kernel of ceilings.cc, for benchmarks that time it alongside their own work.
#pragma once

#include <cstdint>

namespace tileops::bench {

// memcpy of `bytes` from in to out, split over the global thread pool.
void copy_over_pool(const void* in, void* out, std::int64_t bytes);

}  // namespace tileops::bench
