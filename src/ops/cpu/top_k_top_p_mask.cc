// top_k_top_p_mask on CPU, in two passes over the rows so that an error writes nothing: first
// each row's cut (the logits that survive are those above a value, or equal to it at an index
// at least some first index), then the -inf stores below the cut. A row's cut never sorts the
// row: top-k takes the k-th largest logit from a min-heap of k (nth_element for large k), and
// the nucleus sorts growing prefixes of the survivors that can hold it (sampling.h does the same
// for the samplers).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/ops/contracts/top_k_top_p_mask.decl.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/row_offsets.h"
#include "src/ops/cpu/sampling.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/softmax_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr int kLogits = tensor_index(decls::top_k_top_p_mask, "logits");
constexpr int kK = tensor_index(decls::top_k_top_p_mask, "k");
constexpr int kP = tensor_index(decls::top_k_top_p_mask, "p");

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Top-k up to this k keeps a heap of the k largest; larger k selects with nth_element.
constexpr std::int64_t kHeapTopK = 1024;
// The heap scan compares whole blocks of this many logits with its root first.
constexpr std::int64_t kSkipBlock = 16;

// Kept: logits above `value`, and those equal to it at an index >= `first`.
struct RowCut {
  float value = kNegInf;
  std::int64_t first = 0;
  bool keeps_all() const { return value == kNegInf && first == 0; }
};

// The descending walk order: larger logit first, then (equal logits) higher index first, as
// vLLM's ascending stable sort leaves them. The float's bits made monotone (-0 taken as +0)
// above the index.
std::uint64_t key_of(const float* x, std::int64_t i) {
  const float v = x[i] + 0.0f;
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  bits = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return (static_cast<std::uint64_t>(bits) << 32) | static_cast<std::uint32_t>(i);
}
std::int64_t index_of(std::uint64_t key) { return static_cast<std::uint32_t>(key); }

float block_max(const float* x) {
  float most = x[0];
  for (std::int64_t i = 1; i < kSkipBlock; ++i) most = x[i] > most ? x[i] : most;
  return most;
}

// The k-th largest of x[0, n) (1 <= k < n, no NaN); scratch: n floats.
float kth_largest(const float* x, std::int64_t n, std::int64_t k, float* scratch) {
  const std::greater<> larger;
  if (k > kHeapTopK) {
    std::copy(x, x + n, scratch);
    std::nth_element(scratch, scratch + (k - 1), scratch + n, larger);
    return scratch[k - 1];
  }
  // A min-heap of the k largest so far: most logits cost one comparison with its root, and a
  // block no larger than the root costs one vectorised max.
  float* heap = scratch;
  std::copy(x, x + k, heap);
  std::make_heap(heap, heap + k, larger);
  for (std::int64_t block = k; block < n; block += kSkipBlock) {
    const std::int64_t end = std::min(n, block + kSkipBlock);
    if (end - block == kSkipBlock && block_max(x + block) <= heap[0]) continue;
    for (std::int64_t i = block; i < end; ++i) {
      if (x[i] <= heap[0]) continue;
      std::pop_heap(heap, heap + k, larger);
      heap[k - 1] = x[i];
      std::push_heap(heap, heap + k, larger);
    }
  }
  return heap[0];
}

// The nucleus over keys[0, m) (walk-order keys of every token that can be in it; weights e by
// index): the last token in walk order whose predecessors weigh less than `needed`. Reorders
// keys.
RowCut nucleus_cut(const float* x, const float* e, std::uint64_t* keys, std::int64_t m,
                   double needed) {
  const std::greater<> first_in_walk;
  double before = 0.0;  // the mass of the tokens walked so far
  std::int64_t done = 0;
  std::int64_t sorted = std::min<std::int64_t>(m, 256);
  // Sort growing prefixes of the heaviest until the walk stops (usually within the first).
  while (true) {
    if (sorted < m) std::nth_element(keys + done, keys + sorted, keys + m, first_in_walk);
    std::sort(keys + done, keys + sorted, first_in_walk);
    for (; done < sorted; ++done) {
      if (before >= needed) {
        const std::int64_t last = index_of(keys[done - 1]);
        return {x[last], last};
      }
      before += e[index_of(keys[done])];
    }
    if (sorted == m) {
      const std::int64_t last = index_of(keys[m - 1]);
      return {x[last], last};
    }
    sorted = std::min(m, sorted * 4);
  }
}

// The cut of one row x[0, n) for k in [1, n] (n: no top-k) and p in (0, 1] (1: no top-p).
// Scratch: e (n floats) and keys (n words).
RowCut row_cut(const float* x, std::int64_t n, std::int64_t k, double p, std::int64_t row, float* e,
               std::uint64_t* keys) {
  const float max = scaled_max(x, 1.0f, n);
  if (std::isnan(max) || max == std::numeric_limits<float>::infinity()) {
    throw_argument_error(
        ErrorKind::kInvalidArgument, "top_k_top_p_mask", "logits", "finite values or -inf",
        std::string(std::isnan(max) ? "a NaN" : "+inf") + " in row " + std::to_string(row));
  }
  const bool top_k = k < n;
  const bool top_p = p < 1.0;
  if (max == kNegInf || (!top_k && !top_p)) return {};
  const float kth = top_k ? kth_largest(x, n, k, e) : kNegInf;
  if (!top_p) return {kth, 0};
  // The tokens top-k left (every token without it) and the mass of their softmax weights
  // e^(x - max): float32 exp (SIMD over the row unless few are left), float64 sums.
  std::int64_t count = 0;
  double total = 0.0;
  if (top_k) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (x[i] >= kth) keys[count++] = key_of(x, i);
    }
    const bool few = count * 8 < n;
    if (!few) scaled_exp_sum(x, 1.0f, max, n, e);
    for (std::int64_t j = 0; j < count; ++j) {
      const std::int64_t i = index_of(keys[j]);
      if (few) e[i] = std::exp(x[i] - max);
      total += e[i];
    }
  } else {
    scaled_exp_sum(x, 1.0f, max, n, e);
    total = sum_f64(e, n);
    count = n;
  }
  // Tokens lighter than (1 - p)·total / count weigh less than (1 - p)·total together, so the
  // walk stops before reaching them: only the others become keys (a margin for rounding).
  const double floor = (1.0 - p) * total / static_cast<double>(count) * (1.0 - 1e-6);
  std::int64_t m = 0;
  if (top_k) {
    for (std::int64_t j = 0; j < count; ++j) {
      if (e[index_of(keys[j])] >= floor) keys[m++] = keys[j];
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      if (e[i] >= floor) keys[m++] = key_of(x, i);
    }
  }
  return nucleus_cut(x, e, keys, m, p * total);
}

// -inf as the bytes of an element of a float dtype.
struct NegativeInfinity {
  unsigned char bytes[4] = {};
  explicit NegativeInfinity(DataType dtype) {
    if (dtype == DataType::kFloat32) {
      std::memcpy(bytes, &kNegInf, sizeof kNegInf);
    } else {
      const std::uint16_t bits = dtype == DataType::kFloat16 ? 0xFC00u : 0xFF80u;
      std::memcpy(bytes, &bits, sizeof bits);
    }
  }
};

class TopKTopPMaskCpu final : public Operator {
 public:
  explicit TopKTopPMaskCpu(const Problem& p)
      : vocab_(p.tensors[kLogits].shape[1]),
        row_stride_(p.tensors[kLogits].strides[0]),
        col_stride_(p.tensors[kLogits].strides[1]),
        element_size_(size_of(p.tensors[kLogits].dtype)),
        negative_infinity_(p.tensors[kLogits].dtype),
        has_k_(p.tensors[kK].present),
        has_p_(p.tensors[kP].present),
        k_int64_(has_k_ && p.tensors[kK].dtype == DataType::kInt64),
        p_float64_(has_p_ && p.tensors[kP].dtype == DataType::kFloat64),
        k_stride_(filter_stride(p.tensors[kK])),
        p_stride_(filter_stride(p.tensors[kP])) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& logits = tensors[kLogits];
    const std::int64_t rows = logits.size(0);
    const std::int64_t n = vocab_;
    if (rows == 0) return;
    ThreadPool& pool = ctx.threads();
    const int chunks = pool.num_threads();
    // Per chunk: n floats of logits, n float weights, n uint64 keys; whole cache lines.
    constexpr std::string_view kWhat = "top_k_top_p_mask: argument 'logits': its workspace";
    const std::size_t per_chunk =
        (workspace_bytes({{n}}, 2 * sizeof(float) + sizeof(std::uint64_t), kWhat) + 63) / 64 * 64;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        workspace_bytes({{static_cast<std::int64_t>(per_chunk), chunks}}, 1, kWhat));
    const auto scratch = [&](int chunk) {
      return lease.as<char>() + per_chunk * static_cast<std::size_t>(chunk);
    };
    const auto load_row = [&](std::int64_t row, float* into) {
      return row_f32(element_at(logits, row * row_stride_), logits.dtype(), col_stride_, n, into);
    };

    // Pass 1: every row's cut; the lowest failing row's error, if any, before any store.
    std::vector<RowCut> cuts(static_cast<std::size_t>(rows));
    std::vector<std::pair<std::int64_t, std::exception_ptr>> errors(
        static_cast<std::size_t>(chunks), {rows, nullptr});
    pool.parallel_range(rows, 1, [&](int chunk, std::int64_t begin, std::int64_t end) {
      char* base = scratch(chunk);
      auto* keys = reinterpret_cast<std::uint64_t*>(base);
      auto* e = reinterpret_cast<float*>(base + static_cast<std::size_t>(n) * 8);
      auto* x = e + n;
      std::int64_t r = begin;
      try {
        for (; r < end; ++r) {
          cuts[static_cast<std::size_t>(r)] =
              row_cut(load_row(r, x), n, k_of(tensors[kK], r, n), p_of(tensors[kP], r), r, e, keys);
        }
      } catch (...) {
        errors[static_cast<std::size_t>(chunk)] = {r, std::current_exception()};
      }
    });
    const auto first =
        std::min_element(errors.begin(), errors.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    if (first->second) std::rethrow_exception(first->second);

    // Pass 2: -inf below each cut.
    pool.parallel_range(rows, 1, [&](int chunk, std::int64_t begin, std::int64_t end) {
      auto* x = reinterpret_cast<float*>(scratch(chunk) + static_cast<std::size_t>(n) * 12);
      for (std::int64_t r = begin; r < end; ++r) {
        const RowCut cut = cuts[static_cast<std::size_t>(r)];
        if (cut.keeps_all()) continue;
        const float* v = load_row(r, x);
        char* row = element_at(logits, r * row_stride_);
        for (std::int64_t i = 0; i < n; ++i) {
          if (v[i] < cut.value || (v[i] == cut.value && i < cut.first)) {
            std::memcpy(row + i * col_stride_ * static_cast<std::int64_t>(element_size_),
                        negative_infinity_.bytes, element_size_);
          }
        }
      }
    });
  }

 private:
  // One element serves every row (stride 0); B elements are read at their stride.
  static std::int64_t filter_stride(const TensorDesc& t) {
    if (!t.present || t.shape.product() == 1 || t.shape.size() == 0) return 0;
    return t.strides[0];
  }
  std::int64_t k_of(const Tensor& k, std::int64_t row, std::int64_t n) const {
    if (!has_k_) return n;
    const std::int64_t at = row * k_stride_;
    return k_int64_ ? k.data_as<const std::int64_t>()[at] : k.data_as<const std::int32_t>()[at];
  }
  double p_of(const Tensor& p, std::int64_t row) const {
    if (!has_p_) return 1.0;
    const std::int64_t at = row * p_stride_;
    return p_float64_ ? p.data_as<const double>()[at] : p.data_as<const float>()[at];
  }

  std::int64_t vocab_;
  std::int64_t row_stride_;
  std::int64_t col_stride_;
  std::size_t element_size_;
  NegativeInfinity negative_infinity_;
  bool has_k_;
  bool has_p_;
  bool k_int64_;
  bool p_float64_;
  std::int64_t k_stride_;
  std::int64_t p_stride_;
};

}  // namespace

void register_top_k_top_p_mask(std::vector<Implementation>& out) {
  out.push_back({"top_k_top_p_mask", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<TopKTopPMaskCpu>(p); }});
}

}  // namespace tileops::ops::cpu
