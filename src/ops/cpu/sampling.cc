#include "src/ops/cpu/sampling.h"

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

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

// Draws from idx[0, count) in that order with target u·mass; zero weights are never drawn.
std::int64_t draw(const float* w, const std::int32_t* idx, std::int64_t count, double mass,
                  double u) {
  const double target = u * mass;
  double cumulative = 0.0;
  std::int64_t last = idx[0];
  for (std::int64_t j = 0; j < count; ++j) {
    const float weight = w[idx[j]];
    if (weight <= 0.0f) continue;
    cumulative += weight;
    last = idx[j];
    if (cumulative > target) return last;
  }
  return last;  // rounding: target reached the mass itself
}

}  // namespace

double uniform_draw(std::uint64_t seed, std::int64_t row) {
  const std::uint64_t bits = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(row)));
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

std::int64_t sample_row(const float* w, std::int64_t n, double total, RowFilter filter, double u,
                        std::int32_t* idx) {
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
  for (std::int64_t i = 0; i < n; ++i) idx[i] = static_cast<std::int32_t>(i);
  // Heavier first; equal weights by index, so the order (and the draw) is fully determined.
  const auto heavier = [w](std::int32_t a, std::int32_t b) {
    return w[a] > w[b] || (w[a] == w[b] && a < b);
  };
  const std::int64_t cap = top_k ? filter.k : n;
  double mass = total;
  if (top_k) {
    std::nth_element(idx, idx + cap, idx + n, heavier);
    mass = 0.0;
    for (std::int64_t j = 0; j < cap; ++j) mass += w[idx[j]];
  }
  if (!top_p) {
    std::sort(idx, idx + cap);  // index order, independent of nth_element's arrangement
    return draw(w, idx, cap, mass, u);
  }
  // The nucleus is usually small: sort growing prefixes of the heaviest tokens until one holds
  // the mass p·mass.
  const double needed = filter.p * mass;
  std::int64_t sorted = std::min<std::int64_t>(cap, 256);
  while (true) {
    if (sorted < cap) std::nth_element(idx, idx + sorted, idx + cap, heavier);
    std::sort(idx, idx + sorted, heavier);
    double cumulative = 0.0;
    for (std::int64_t j = 0; j < sorted; ++j) {
      cumulative += w[idx[j]];
      if (cumulative >= needed) return draw(w, idx, j + 1, cumulative, u);
    }
    if (sorted == cap) return draw(w, idx, cap, cumulative, u);
    sorted = std::min(cap, sorted * 4);
  }
}

void sample_rows(std::int64_t rows, std::int64_t n, RowWeights weights, RowFilters filters,
                 std::uint64_t seed, const Tensor& out, const Context& ctx) {
  if (rows == 0) return;
  ThreadPool& pool = ctx.threads();
  const int chunks = pool.num_threads();
  // Per chunk: n float weights and n int32 indices.
  const auto per_chunk = static_cast<std::size_t>(n) * (sizeof(float) + sizeof(std::int32_t));
  WorkspacePool::Lease lease =
      ctx.workspace().acquire(kCpu, ctx.stream, 0, per_chunk * static_cast<std::size_t>(chunks));
  std::vector<std::int64_t> tokens(static_cast<std::size_t>(rows));
  // Per chunk: its first failing row and the error.
  std::vector<std::pair<std::int64_t, std::exception_ptr>> errors(static_cast<std::size_t>(chunks),
                                                                  {rows, nullptr});
  pool.parallel_range(rows, 1, [&](int chunk, std::int64_t begin, std::int64_t end) {
    auto* base = lease.as<char>() + per_chunk * static_cast<std::size_t>(chunk);
    auto* w = reinterpret_cast<float*>(base);
    auto* idx = reinterpret_cast<std::int32_t*>(base + static_cast<std::size_t>(n) * sizeof(float));
    std::int64_t r = begin;
    try {
      for (; r < end; ++r) {
        const double total = weights(r, w);
        tokens[static_cast<std::size_t>(r)] =
            sample_row(w, n, total, filters(r), uniform_draw(seed, r), idx);
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
