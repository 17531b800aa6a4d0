#include "src/ops/cpu/sampling.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "src/ops/framework/workspace_bytes.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A token's sort key: its weight's bits (non-negative floats order as their bits) above its
// complemented index, so a larger key is a heavier token and, on equal weights, a lower index.
std::uint64_t key_of(const float* w, std::int64_t i) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &w[i], sizeof bits);
  return (static_cast<std::uint64_t>(bits) << 32) | static_cast<std::uint32_t>(~i);
}
float weight_of(std::uint64_t key) {
  const auto bits = static_cast<std::uint32_t>(key >> 32);
  float w = 0.0f;
  std::memcpy(&w, &bits, sizeof w);
  return w;
}
std::int64_t token_of(std::uint64_t key) { return ~static_cast<std::uint32_t>(key); }

// Draws from keys[0, count) in that order with target u·mass; zero weights are never drawn.
std::int64_t draw(const std::uint64_t* keys, std::int64_t count, double mass, double u) {
  const double target = u * mass;
  double cumulative = 0.0;
  std::int64_t last = token_of(keys[0]);
  for (std::int64_t j = 0; j < count; ++j) {
    const float weight = weight_of(keys[j]);
    if (weight <= 0.0f) continue;
    cumulative += weight;
    last = token_of(keys[j]);
    if (cumulative > target) return last;
  }
  return last;  // rounding: target reached the mass itself
}

// Top-k up to this k scans through a heap; larger k selects with nth_element.
constexpr std::int64_t kHeapTopK = 1024;

// The heap scan looks at blocks of this many weights before looking at each token.
constexpr std::int64_t kSkipBlock = 16;
std::uint32_t max_bits(const float* w) {
  std::uint32_t bits[kSkipBlock];
  std::memcpy(bits, w, sizeof bits);
  std::uint32_t most = 0;
  for (const std::uint32_t b : bits) most = std::max(most, b);
  return most;
}

}  // namespace

double sum_f64(const float* w, std::int64_t n) {
  double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += w[i];
    a1 += w[i + 1];
    a2 += w[i + 2];
    a3 += w[i + 3];
  }
  for (; i < n; ++i) a0 += w[i];
  return (a0 + a1) + (a2 + a3);
}

double uniform_draw(std::uint64_t seed, std::int64_t row) {
  const std::uint64_t bits = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(row)));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

std::int64_t sample_row(const float* w, std::int64_t n, double total, RowFilter filter, double u,
                        std::uint64_t* keys) {
  const bool top_k = filter.k > 0 && filter.k < n;
  const bool top_p = filter.p < 1.0;
  if (!top_k && !top_p) {
    // No filter: the inverse CDF in index order, no sort.
    double cumulative = 0.0;
    const double target = u * total;
    std::int64_t last = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (w[i] <= 0.0f) continue;
      cumulative += w[i];
      last = i;
      if (cumulative > target) return i;
    }
    return last;
  }
  const std::greater<> heavier;
  std::int64_t count = n;
  double mass = total;
  if (top_k) {
    count = filter.k;
    if (count <= kHeapTopK) {
      // A min-heap of the k heaviest so far: most tokens cost one comparison with its root.
      for (std::int64_t i = 0; i < count; ++i) keys[i] = key_of(w, i);
      std::make_heap(keys, keys + count, heavier);
      for (std::int64_t block = count; block < n; block += kSkipBlock) {
        const std::int64_t end = std::min(n, block + kSkipBlock);
        // A block whose weights' bits are all at most the root's holds no heavier token (equal
        // bits lose to the root's lower index): one vectorised max skips it.
        if (end - block == kSkipBlock &&
            max_bits(w + block) <= static_cast<std::uint32_t>(keys[0] >> 32)) {
          continue;
        }
        for (std::int64_t i = block; i < end; ++i) {
          const std::uint64_t key = key_of(w, i);
          if (key <= keys[0]) continue;
          std::pop_heap(keys, keys + count, heavier);
          keys[count - 1] = key;
          std::push_heap(keys, keys + count, heavier);
        }
      }
    } else {
      for (std::int64_t i = 0; i < n; ++i) keys[i] = key_of(w, i);
      std::nth_element(keys, keys + count, keys + n, heavier);
    }
    mass = 0.0;
    for (std::int64_t j = 0; j < count; ++j) mass += weight_of(keys[j]);
  }
  if (!top_p) {
    std::sort(keys, keys + count, heavier);
    return draw(keys, count, mass, u);
  }
  // The tokens lighter than (1 - p)·mass / count weigh at most (1 - p)·mass together, so the
  // nucleus (mass >= p·mass) never needs them: drop them before sorting.
  const double floor = (1.0 - filter.p) * mass / static_cast<double>(count);
  std::int64_t m = 0;
  if (top_k) {
    for (std::int64_t j = 0; j < count; ++j) {
      if (weight_of(keys[j]) >= floor) keys[m++] = keys[j];
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      if (w[i] >= floor) keys[m++] = key_of(w, i);
    }
  }
  // Sort growing prefixes of the heaviest until one holds the mass p·mass (usually small).
  const double needed = filter.p * mass;
  double cumulative = 0.0;
  std::int64_t done = 0;
  std::int64_t sorted = std::min<std::int64_t>(m, 256);
  while (true) {
    if (sorted < m) std::nth_element(keys + done, keys + sorted, keys + m, heavier);
    std::sort(keys + done, keys + sorted, heavier);
    for (; done < sorted; ++done) {
      cumulative += weight_of(keys[done]);
      if (cumulative >= needed) return draw(keys, done + 1, cumulative, u);
    }
    if (sorted == m) return draw(keys, m, cumulative, u);
    sorted = std::min(m, sorted * 4);
  }
}

void sample_rows(std::int64_t rows, std::int64_t n, RowWeights weights, RowFilters filters,
                 std::uint64_t seed, const Tensor& out, const Context& ctx) {
  if (rows == 0) return;
  ThreadPool& pool = ctx.threads();
  const int chunks = pool.num_threads();
  // Per chunk: n uint64 sort keys, then n float weights; whole cache lines, so that every
  // chunk's keys are aligned (an odd n misaligned the second chunk's) and no line is shared.
  constexpr std::string_view kWhat = "sampling: argument 'logits': its workspace";
  const std::size_t per_chunk =
      (workspace_bytes({{n}}, sizeof(std::uint64_t) + sizeof(float), kWhat) + 63) / 64 * 64;
  WorkspacePool::Lease lease = ctx.workspace().acquire(
      kCpu, ctx.stream, 0,
      workspace_bytes({{static_cast<std::int64_t>(per_chunk), chunks}}, 1, kWhat));
  std::vector<std::int64_t> tokens(static_cast<std::size_t>(rows));
  // Per chunk: its first failing row and the error.
  std::vector<std::pair<std::int64_t, std::exception_ptr>> errors(static_cast<std::size_t>(chunks),
                                                                  {rows, nullptr});
  pool.parallel_range(rows, 1, [&](int chunk, std::int64_t begin, std::int64_t end) {
    auto* base = lease.as<char>() + per_chunk * static_cast<std::size_t>(chunk);
    auto* keys = reinterpret_cast<std::uint64_t*>(base);
    auto* w = reinterpret_cast<float*>(base + static_cast<std::size_t>(n) * sizeof(std::uint64_t));
    std::int64_t r = begin;
    try {
      for (; r < end; ++r) {
        const double total = weights(r, w);
        tokens[static_cast<std::size_t>(r)] =
            sample_row(w, n, total, filters(r), uniform_draw(seed, r), keys);
      }
    } catch (...) {
      errors[static_cast<std::size_t>(chunk)] = {r, std::current_exception()};
    }
  });
  const auto first = std::min_element(
      errors.begin(), errors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (first->second) std::rethrow_exception(first->second);
  const std::int64_t stride = out.stride(0);
  for (std::int64_t r = 0; r < rows; ++r) {
    if (out.dtype() == DataType::kInt64) {
      out.data_as<std::int64_t>()[r * stride] = tokens[static_cast<std::size_t>(r)];
    } else {
      out.data_as<std::int32_t>()[r * stride] =
          static_cast<std::int32_t>(tokens[static_cast<std::size_t>(r)]);
    }
  }
}

}  // namespace tileops::ops::cpu
