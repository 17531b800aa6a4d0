// paged_attention on CPU: one work item per (sequence, kv head, split of the keys). The query
// rows of the kv head's group are dotted with the cached key rows straight from the cache (any
// float dtype; gemm_dot_rows), the online softmax runs over chunks of keys, and the value rows are
// accumulated straight from the cache too, so every cached byte is read once. When the batch has
// fewer (sequence, kv head) pairs than the threads can use, long contexts are split over threads
// (split-KV) and the partial results merged by their log-sum-exp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "src/ops/cpu/attention/attention_plan.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/attention_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/gemm_kernels.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

constexpr std::int64_t kChunk = 64;         // keys per online-softmax step
constexpr std::int64_t kMinSplit = 256;     // fewer keys per split cost more to merge than gain
constexpr std::int64_t kItemsPerThread = 4;  // split until there are this many items per thread
constexpr std::int64_t kDotRowsMax = 16;    // gemm_dot_rows' row limit
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct DecodeItem {
  std::int64_t b, kv_head, k0, k1;
  std::int64_t partial;  // slot in the partial buffer, -1: the only split (writes the output)
};

class PagedAttentionCpu final : public Operator {
 public:
  explicit PagedAttentionCpu(const Problem& problem)
      : shape_(AttentionShape::of(problem)), dtype_(problem.tensors[0].dtype) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& query = tensors[0];
    const Tensor& lens = present(tensors[6]) ? tensors[6] : tensors[3];
    const Tensor& table = present(tensors[7]) ? tensors[7] : tensors[4];
    const std::int64_t batch = query.size(0);
    const std::int64_t kv_heads = shape_.kv_heads;
    const std::int64_t g = shape_.group;
    const std::int64_t d = shape_.head_size;
    ThreadPool& pool = ctx.threads();
    const std::int64_t threads = pool.num_threads();

    std::int64_t max_len = 0;
    for (std::int64_t b = 0; b < batch; ++b) max_len = std::max<std::int64_t>(max_len, index_at(lens, b));
    const std::int64_t units = batch * kv_heads;
    std::int64_t split = std::numeric_limits<std::int64_t>::max();
    if (units < kItemsPerThread * threads / 2) {
      const std::int64_t want = (max_len * units + kItemsPerThread * threads - 1) /
                                (kItemsPerThread * threads);
      split = std::max(kMinSplit, (want + shape_.block_size - 1) / shape_.block_size *
                                      shape_.block_size);
    }
    std::vector<DecodeItem> items;
    std::vector<std::int64_t> merge_first;  // per (b, h) with several splits: first partial slot
    std::vector<std::int64_t> merge_unit, merge_count;
    std::int64_t partials = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t len = index_at(lens, b);
      const std::int64_t lo =
          shape_.window_left < 0 ? 0 : std::max<std::int64_t>(0, len - 1 - shape_.window_left);
      const std::int64_t n = len - lo;
      const std::int64_t splits = n <= split ? 1 : (n + split - 1) / split;
      for (std::int64_t h = 0; h < kv_heads; ++h) {
        if (splits > 1) {
          merge_first.push_back(partials);
          merge_unit.push_back(b * kv_heads + h);
          merge_count.push_back(splits);
        }
        for (std::int64_t s = 0; s < splits; ++s) {
          items.push_back({b, h, lo + s * n / splits, lo + (s + 1) * n / splits,
                           splits > 1 ? partials++ : -1});
        }
      }
    }

    const std::int64_t partial_floats = g * (d + 2);
    const std::int64_t scratch = g * d + g * kChunk + g * d + 3 * g + 2 * kChunk * d + 64;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        sizeof(float) * static_cast<std::size_t>(partials * partial_floats + threads * scratch));
    float* partial = lease.as<float>();
    float* thread_scratch = partial + partials * partial_floats;
    const KvRows keys(tensors[1], table, shape_.block_size);
    const KvRows values(tensors[2], table, shape_.block_size);

    std::atomic<std::int64_t> next{0};
    const auto n_items = static_cast<std::int64_t>(items.size());
    pool.parallel_range(threads, 1, [&](int chunk, std::int64_t, std::int64_t) {
      for (std::int64_t i = next.fetch_add(1); i < n_items; i = next.fetch_add(1)) {
        run_item(query, keys, values, tensors[5], items[i], partial, partial_floats,
                 thread_scratch + chunk * scratch);
      }
    });
    if (partials == 0) return;
    pool.parallel_for(static_cast<std::int64_t>(merge_unit.size()), [&](std::int64_t u) {
      merge(partial + merge_first[u] * partial_floats, merge_count[u], partial_floats,
            merge_unit[u], tensors[5]);
    });
  }

 private:
  static bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

  const void* element(const Tensor& t, std::int64_t i, std::int64_t h) const {
    return static_cast<const char*>(t.data()) +
           (i * t.stride(0) + h * t.stride(1)) * static_cast<std::int64_t>(t.element_size());
  }

  // Scores s[r][j] = q_r · k_j for the keys [j0, j0 + n) of one item.
  void scores(const float* q, const KvRows& keys, std::int64_t b, const Sequence& seq,
              std::int64_t h, std::int64_t j0, std::int64_t n, float* s, float* rows) const {
    const std::int64_t d = shape_.head_size;
    for (std::int64_t j = j0; j < j0 + n;) {
      const std::int64_t run = keys.run_length(j, j0 + n);
      const void* k = keys.row(b, seq, h, j);
      std::int64_t ld = keys.key_stride();
      DataType dt = dtype_;
      if (keys.d_stride() != 1) {  // gather the rows into float32 first
        for (std::int64_t i = 0; i < run; ++i) {
          load_f32(keys.row(b, seq, h, j + i), dtype_, keys.d_stride(), d, rows + i * d);
        }
        k = rows, ld = d, dt = DataType::kFloat32;
      }
      for (std::int64_t r = 0; r < shape_.group; r += kDotRowsMax) {
        gemm_dot_rows(q + r * d, d, std::min(kDotRowsMax, shape_.group - r), k, dt, ld, run, d,
                      s + r * kChunk + (j - j0), kChunk);
      }
      j += run;
    }
  }

  void accumulate(const float* p, const KvRows& values, std::int64_t b, const Sequence& seq,
                  std::int64_t h, std::int64_t j0, std::int64_t n, float* o, float* rows) const {
    const std::int64_t d = shape_.head_size;
    for (std::int64_t j = j0; j < j0 + n;) {
      const std::int64_t run = values.run_length(j, j0 + n);
      const void* v = values.row(b, seq, h, j);
      std::int64_t ld = values.key_stride();
      DataType dt = dtype_;
      if (values.d_stride() != 1) {
        for (std::int64_t i = 0; i < run; ++i) {
          load_f32(values.row(b, seq, h, j + i), dtype_, values.d_stride(), d, rows + i * d);
        }
        v = rows, ld = d, dt = DataType::kFloat32;
      }
      attention_accumulate_values(p + (j - j0), kChunk, shape_.group, v, dt, ld, run, d, o, d);
      j += run;
    }
  }

  void run_item(const Tensor& query, const KvRows& keys, const KvRows& values,
                const Tensor& output, const DecodeItem& item, float* partial,
                std::int64_t partial_floats, float* scratch) const {
    const std::int64_t g = shape_.group;
    const std::int64_t d = shape_.head_size;
    float* q = scratch;
    float* s = q + g * d;
    float* o = s + g * kChunk;
    float* m = o + g * d;
    float* l = m + g;
    float* corr = l + g;
    float* rows = corr + g;
    for (std::int64_t r = 0; r < g; ++r) {
      load_f32(element(query, item.b, item.kv_head * g + r), dtype_, query.stride(2), d, q + r * d);
      for (std::int64_t c = 0; c < d; ++c) q[r * d + c] *= shape_.scale;
    }
    std::fill(o, o + g * d, 0.0f);
    std::fill(m, m + g, kNegInf);
    std::fill(l, l + g, 0.0f);
    const Sequence seq{};  // paged: rows are found through the block table alone
    for (std::int64_t j0 = item.k0; j0 < item.k1; j0 += kChunk) {
      const std::int64_t n = std::min(kChunk, item.k1 - j0);
      scores(q, keys, item.b, seq, item.kv_head, j0, n, s, rows);
      attention_softmax_tile(s, kChunk, g, n, m, l, corr);
      attention_scale_rows(o, d, g, d, corr);
      accumulate(s, values, item.b, seq, item.kv_head, j0, n, o, rows);
    }
    if (item.partial >= 0) {
      float* slot = partial + item.partial * partial_floats;
      std::copy(m, m + g, slot);
      std::copy(l, l + g, slot + g);
      std::copy(o, o + g * d, slot + 2 * g);
      return;
    }
    for (std::int64_t r = 0; r < g; ++r) {
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;  // an empty sequence gets zeros
      for (std::int64_t c = 0; c < d; ++c) o[r * d + c] *= inv;
      store_f32(o + r * d, const_cast<void*>(element(output, item.b, item.kv_head * g + r)),
                dtype_, output.stride(2), d);
    }
  }

  // out = Σ_s e^(m_s - M)·o_s / Σ_s e^(m_s - M)·l_s over the splits of one (sequence, kv head).
  void merge(const float* slots, std::int64_t count, std::int64_t partial_floats,
             std::int64_t unit, const Tensor& output) const {
    const std::int64_t g = shape_.group;
    const std::int64_t d = shape_.head_size;
    const std::int64_t b = unit / shape_.kv_heads;
    const std::int64_t h = unit % shape_.kv_heads;
    std::vector<float> row(d);
    for (std::int64_t r = 0; r < g; ++r) {
      float big = kNegInf;
      for (std::int64_t s = 0; s < count; ++s) big = std::max(big, slots[s * partial_floats + r]);
      std::fill(row.begin(), row.end(), 0.0f);
      float total = 0.0f;
      if (big != kNegInf) {
        for (std::int64_t s = 0; s < count; ++s) {
          const float* slot = slots + s * partial_floats;
          if (slot[r] == kNegInf) continue;
          const float w = std::exp(slot[r] - big);
          total += w * slot[g + r];
          for (std::int64_t c = 0; c < d; ++c) row[c] += w * slot[2 * g + r * d + c];
        }
      }
      const float inv = total > 0.0f ? 1.0f / total : 0.0f;
      for (float& x : row) x *= inv;
      store_f32(row.data(), const_cast<void*>(element(output, b, h * g + r)), dtype_,
                output.stride(2), d);
    }
  }

  AttentionShape shape_;
  DataType dtype_;
};

}  // namespace

void register_paged_attention(std::vector<Implementation>& out) {
  out.push_back({"paged_attention", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<PagedAttentionCpu>(p); }});
}

}  // namespace tileops::ops::cpu
