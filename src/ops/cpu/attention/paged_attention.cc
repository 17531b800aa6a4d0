// paged_attention on CPU: one work item per (sequence, split of its keys) covering every head,
// so that the cache is read block by block in address order (a block holds all kv heads of its
// keys: reading one head at a time would touch one row per 4 KiB page). Per chunk of a block's
// keys and per kv head, the group's query rows are dotted with the key rows straight from the
// cache (any float dtype), the online softmax advances, and the value rows are accumulated
// straight from the cache too: every cached byte is read once, and the next chunk is prefetched
// whole, in address order, meanwhile. When there are fewer
// sequences than the threads can use, long contexts are split over threads (split-KV) and the
// partial results merged by their log-sum-exp.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "src/ops/contracts/paged_attention.decl.h"
#include "src/ops/cpu/attention/attention_plan.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/attention_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "src/ops/cpu/simd/decode_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/float8.h"
#include "tileops/runtime/cpu_info.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/paged_attention.decl.h).
constexpr int kQuery = tensor_index(decls::paged_attention, "query");
constexpr int kKeyCache = tensor_index(decls::paged_attention, "key_cache");
constexpr int kValueCache = tensor_index(decls::paged_attention, "value_cache");
constexpr int kSeqLens = tensor_index(decls::paged_attention, "seq_lens");
constexpr int kBlockTable = tensor_index(decls::paged_attention, "block_table");
constexpr int kOutput = tensor_index(decls::paged_attention, "output");
constexpr int kSeqLensHost = tensor_index(decls::paged_attention, "seq_lens_host");
constexpr int kBlockTableHost = tensor_index(decls::paged_attention, "block_table_host");
constexpr int kAlibiSlopes = tensor_index(decls::paged_attention, "alibi_slopes");
constexpr int kKScale = tensor_index(decls::paged_attention, "k_scale");
constexpr int kVScale = tensor_index(decls::paged_attention, "v_scale");

constexpr std::int64_t kChunk = 64;          // most keys per online-softmax step
constexpr std::int64_t kMinSplit = 256;      // fewer keys per split cost more to merge than gain
constexpr std::int64_t kItemsPerThread = 4;  // split until there are this many items per thread
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct DecodeItem {
  std::int64_t b, k0, k1;
  std::int64_t len;      // the sequence's keys (ALiBi counts back from the last)
  std::int64_t partial;  // slot in the partial buffer, -1: the only split (writes the output)
};

// What a call reads besides the tensors, each null when absent: ALiBi slopes per head, and an
// fp8 cache's byte values times its scale (keys, values).
struct CallData {
  const float* alibi = nullptr;
  const float* k_values = nullptr;
  const float* v_values = nullptr;
};

// Per-item state of every head: running max, sum and unnormalised output.
struct HeadState {
  float* m;
  float* l;
  float* o;  // [heads][head_size]
};

class PagedAttentionCpu final : public Operator {
 public:
  // An fp8 cache is gathered into float32 rows, so the kernels run on float32 then.
  explicit PagedAttentionCpu(const Problem& problem)
      : shape_(AttentionShape::of(problem)),
        dtype_(problem.tensors[kQuery].dtype),
        cache_dtype_(problem.tensors[kKeyCache].dtype),
        kernel_dtype_(cache_dtype_ == dtype_ ? dtype_ : DataType::kFloat32),
        cache_size_(static_cast<std::int64_t>(size_of(cache_dtype_))),
        spread_share_(kernels_take_share(shape_.group, dtype_)) {}

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& query = tensors[kQuery];
    const Tensor& lens = present(tensors[kSeqLensHost]) ? tensors[kSeqLensHost] : tensors[kSeqLens];
    const Tensor& table =
        present(tensors[kBlockTableHost]) ? tensors[kBlockTableHost] : tensors[kBlockTable];
    const std::int64_t batch = query.size(0);
    const std::int64_t heads = shape_.heads;
    const std::int64_t d = shape_.head_size;
    ThreadPool& pool = ctx.threads();
    const std::int64_t threads = pool.num_threads();

    std::int64_t max_len = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      max_len = std::max<std::int64_t>(max_len, index_at(lens, b));
    }
    std::int64_t split = std::numeric_limits<std::int64_t>::max();
    if (batch > 0 && batch < kItemsPerThread * threads / 2) {
      // Saturated: only the split length follows from the product.
      const std::int64_t total = max_len > std::numeric_limits<std::int64_t>::max() / batch
                                     ? std::numeric_limits<std::int64_t>::max()
                                     : max_len * batch;
      const std::int64_t want = ceil_div(total, kItemsPerThread * threads);
      split = std::max(kMinSplit, ceil_div(want, shape_.block_size) * shape_.block_size);
    }
    std::vector<DecodeItem> items;
    std::vector<std::int64_t> merge_batch, merge_first, merge_count;
    std::int64_t partials = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t len = index_at(lens, b);
      // The query is the last position: the left window counts back from it.
      const std::int64_t lo =
          shape_.window_left < 0 ? 0 : std::max<std::int64_t>(0, len - 1 - shape_.window_left);
      const std::int64_t n = len - lo;
      const std::int64_t splits = n <= split ? 1 : ceil_div(n, split);
      if (splits > 1) {
        merge_batch.push_back(b), merge_first.push_back(partials), merge_count.push_back(splits);
      }
      for (std::int64_t s = 0; s < splits; ++s) {
        items.push_back(
            {b, lo + s * n / splits, lo + (s + 1) * n / splits, len, splits > 1 ? partials++ : -1});
      }
    }

    const std::int64_t state_floats = heads * (d + 2);
    const std::int64_t scratch =
        state_floats + heads * d + shape_.group * kChunk + 2 * heads + kChunk * d + 64;
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        workspace_bytes({{partials, state_floats}, {threads, scratch}}, sizeof(float),
                        "paged_attention: argument 'query'"));
    float* partial = lease.as<float>();
    float* thread_scratch = partial + partials * state_floats;
    const KvRows keys(tensors[kKeyCache], table, shape_.block_size);
    const KvRows values(tensors[kValueCache], table, shape_.block_size);
    std::vector<float> slopes;
    if (present(tensors[kAlibiSlopes])) {
      const Tensor& given = tensors[kAlibiSlopes];
      slopes.resize(static_cast<std::size_t>(heads));
      for (std::int64_t h = 0; h < heads; ++h) {
        slopes[h] = given.data_as<const float>()[h * given.stride(0)];
      }
    }
    CallData call;
    call.alibi = slopes.empty() ? nullptr : slopes.data();
    std::array<float, 256> k_values{}, v_values{};
    if (cache_dtype_ != dtype_) {
      const float k_scale = scale_of(tensors[kKScale]), v_scale = scale_of(tensors[kVScale]);
      for (int bits = 0; bits < 256; ++bits) {
        const auto byte = static_cast<std::uint8_t>(bits);
        const float v = cache_dtype_ == DataType::kFloat8E4M3FN ? float8_e4m3fn_to_float(byte)
                                                                : float8_e5m2_to_float(byte);
        k_values[bits] = v * k_scale, v_values[bits] = v * v_scale;
      }
      call.k_values = k_values.data(), call.v_values = v_values.data();
    }

    pool.parallel_claim(static_cast<std::int64_t>(items.size()), [&](int chunk, std::int64_t i) {
      float* mine = thread_scratch + chunk * scratch;
      float* slot = items[i].partial >= 0 ? partial + items[i].partial * state_floats : mine;
      const HeadState state{slot, slot + heads, slot + 2 * heads};
      run_item(query, keys, values, call, items[i], state, mine + state_floats);
      if (items[i].partial < 0) {
        finish(state, 1, 0, items[i].b, items[i].k1 > items[i].k0, tensors[kOutput]);
      }
    });
    pool.parallel_for(static_cast<std::int64_t>(merge_batch.size()), [&](std::int64_t u) {
      float* slot = partial + merge_first[u] * state_floats;
      finish({slot, slot + heads, slot + 2 * heads}, merge_count[u], state_floats, merge_batch[u],
             true, tensors[kOutput]);
    });
  }

 private:
  static bool present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }
  static float scale_of(const Tensor& t) { return present(t) ? *t.data_as<const float>() : 1.0f; }

  void* element(const Tensor& t, std::int64_t i, std::int64_t h) const {
    return static_cast<char*>(t.data()) +
           (i * t.stride(0) + h * t.stride(1)) * static_cast<std::int64_t>(t.element_size());
  }

  // Where keys [j, j + n) of kv head 0 start, block by block through the table.
  void chunk_rows(const KvRows& kv, std::int64_t b, std::int64_t j, std::int64_t n,
                  const char** first) const {
    const std::int64_t key_bytes = kv.key_stride() * cache_size_;
    for (std::int64_t i = 0; i < n;) {
      const std::int64_t run = kv.run_length(j + i, j + n);
      const auto* row = static_cast<const char*>(kv.row(b, Sequence{}, 0, j + i));
      for (std::int64_t r = 0; r < run; ++r) first[i + r] = row + r * key_bytes;
      i += run;
    }
  }

  // The bytes of one cached row the kernels read (all of its strided elements).
  // A split row: its first piece (x elements) only.
  std::int64_t row_bytes(const KvRows& kv) const {
    const std::int64_t elements = kv.split() != 0 ? kv.split() : shape_.head_size;
    return elements * cache_size_ * std::max<std::int64_t>(1, kv.d_stride());
  }

  // Bytes of one key's row of all kv heads when they are contiguous (the usual cache), else 0.
  std::int64_t whole_row_bytes(const KvRows& kv) const {
    const std::int64_t d = shape_.head_size;
    if (!kv.row_contiguous() || kv.head_stride() != d || kv.key_stride() != shape_.kv_heads * d) {
      return 0;
    }
    return kv.key_stride() * cache_size_;
  }

  // Prefetches share `part` of `parts` of the n rows (`row` bytes each, from first[i]) into L2,
  // in address order. The division per line is kept on purpose: it spaces the prefetches. Without
  // it they leave in one burst that fills the miss buffers, and the kernels' loads wait behind it
  // (bench/results/cpu-tuning.md).
  static void prefetch_share(const char* const* first, std::int64_t row, std::int64_t n,
                             std::int64_t part, std::int64_t parts) {
    const std::int64_t total = n * row;
    const std::int64_t begin = total * part / parts / 64 * 64, end = total * (part + 1) / parts;
    for (std::int64_t b = begin; b < end; b += 64) {
      __builtin_prefetch(first[b / row] + b % row, 0, 2);
    }
  }

  // Kv head h of the chunk whose kv head 0 rows start at `first`.
  CacheRows head_rows(const KvRows& kv, const char* const* first, std::int64_t n,
                      std::int64_t h) const {
    return {first, h * kv.head_stride() * cache_size_, n};
  }

  // The kernels read contiguous rows of kernel_dtype_: strided or split rows are gathered into
  // `buffer` (n rows of head_size elements; a split row's pieces of x elements one copy each
  // when they are contiguous, as in vLLM's key cache) and listed in `gathered`; an fp8 cache's
  // rows are gathered as float32 fp8 · scale (`fp8_values`: per byte).
  CacheRows contiguous(const KvRows& kv, const CacheRows& rows, char* buffer, const char** gathered,
                       const float* fp8_values) const {
    const std::int64_t d = shape_.head_size;
    if (fp8_values != nullptr) {
      for (std::int64_t i = 0; i < rows.n; ++i) {
        const auto* row = static_cast<const std::uint8_t*>(rows.row(i));
        float* out = reinterpret_cast<float*>(buffer) + i * d;
        for (std::int64_t c = 0; c < d; ++c) out[c] = fp8_values[row[kv.element_offset(c)]];
        gathered[i] = reinterpret_cast<const char*>(out);
      }
      return {gathered, 0, rows.n};
    }
    if (kv.row_contiguous()) return rows;
    const auto size = cache_size_;
    const std::int64_t piece = kv.split() != 0 && kv.d_stride() == 1 ? kv.split() : 1;
    for (std::int64_t i = 0; i < rows.n; ++i) {
      const auto* row = static_cast<const char*>(rows.row(i));
      char* out = buffer + i * d * size;
      for (std::int64_t c = 0; c < d; c += piece) {
        std::memcpy(out + c * size, row + kv.element_offset(c) * size,
                    static_cast<std::size_t>(piece * size));
      }
      gathered[i] = out;
    }
    return {gathered, 0, rows.n};
  }

  // vLLM's ALiBi: query row g (head h0 + g) gains slope[h0 + g] * (key - (len - 1)) for the
  // chunk's keys first, first + 1, ..., first + n - 1.
  static void add_alibi(const float* slope, std::int64_t h0, std::int64_t groups, float* s,
                        std::int64_t lds, std::int64_t n, std::int64_t first, std::int64_t len) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const float m = slope[h0 + g];
      for (std::int64_t j = 0; j < n; ++j) {
        s[g * lds + j] += m * static_cast<float>(first + j - (len - 1));
      }
    }
  }

  void run_item(const Tensor& query, const KvRows& keys, const KvRows& values, const CallData& call,
                const DecodeItem& item, const HeadState& state, float* scratch) const {
    const std::int64_t g = shape_.group;
    const std::int64_t d = shape_.head_size;
    const std::int64_t heads = shape_.heads;
    float* q = scratch;
    float* s = q + heads * d;
    float* corr = s + g * kChunk;
    float* rows = corr + 2 * heads;
    for (std::int64_t h = 0; h < heads; ++h) {
      load_f32(element(query, item.b, h), dtype_, query.stride(2), d, rows);
      for (std::int64_t c = 0; c < d; ++c) rows[c] *= shape_.scale;
      decode_column_order(kernel_dtype_, rows, 1, d, q + h * d, /*to_kernel=*/true);
    }
    std::fill(state.o, state.o + heads * d, 0.0f);
    std::fill(state.m, state.m + heads, kNegInf);
    std::fill(state.l, state.l + heads, 0.0f);
    // Chunks of one block (at least 16 keys, at most kChunk, across blocks when they are
    // smaller), so that all kv heads of a block are read before the next block and the next
    // chunk's prefetch (below) runs one block ahead: with it, longer chunks (which pay the softmax
    // step and the output rows' update less often) lost (bench/results/cpu-tuning.md).
    std::array<const char*, kChunk> k_first{}, v_first{}, k_next{}, v_next{}, gathered{};
    char* buffer = reinterpret_cast<char*>(rows);
    const std::int64_t k_bytes = row_bytes(keys), v_bytes = row_bytes(values);
    const std::int64_t chunk = std::min(kChunk, std::max<std::int64_t>(16, shape_.block_size));
    std::int64_t n = std::min(chunk, item.k1 - item.k0);
    chunk_rows(keys, item.b, item.k0, n, k_first.data());
    chunk_rows(values, item.b, item.k0, n, v_first.data());
    for (std::int64_t j = item.k0; j < item.k1;) {
      const std::int64_t n2 = std::min(chunk, item.k1 - j - n);
      if (n2 > 0) {
        chunk_rows(keys, item.b, j + n, n2, k_next.data());
        chunk_rows(values, item.b, j + n, n2, v_next.data());
      }
      // The kernels read one kv head's rows at a time, a row per key 4-16 KiB apart; the next
      // chunk's keys and values are fetched whole meanwhile, a share per kv head, in address
      // order: by the kernels themselves, spread over their steps (spread_share_), or in a loop
      // ahead of them (two chunks ahead, no more), and then the kernels prefetch the next
      // (chunk, kv head)'s rows: blocks are scattered, so the hardware prefetcher restarts at
      // each one.
      const std::int64_t k_row = n2 > 0 ? whole_row_bytes(keys) : 0;
      const std::int64_t v_row = n2 > 0 ? whole_row_bytes(values) : 0;
      const bool spread = k_row > 0 && v_row > 0 && cache_dtype_ == dtype_ && spread_share_;
      const std::int64_t k_lines = n2 * ((k_row + 63) / 64), v_lines = n2 * ((v_row + 63) / 64);
      for (std::int64_t h = 0; h < shape_.kv_heads; ++h) {
        PrefetchRows next_k, next_v;
        const std::int64_t kvh = shape_.kv_heads;
        if (spread) {
          next_k = {{k_next.data(), 0, n2}, k_row, k_lines * h / kvh, k_lines * (h + 1) / kvh};
          next_v = {{v_next.data(), 0, n2}, v_row, v_lines * h / kvh, v_lines * (h + 1) / kvh};
        } else {
          if (k_row > 0) prefetch_share(k_next.data(), k_row, n2, h, kvh);
          if (v_row > 0) prefetch_share(v_next.data(), v_row, n2, h, kvh);
          if (h + 1 < kvh) {
            next_k = {head_rows(keys, k_first.data(), n, h + 1), k_bytes};
            next_v = {head_rows(values, v_first.data(), n, h + 1), v_bytes};
          } else if (n2 > 0) {
            next_k = {head_rows(keys, k_next.data(), n2, 0), k_bytes};
            next_v = {head_rows(values, v_next.data(), n2, 0), v_bytes};
          }
        }
        const std::int64_t r0 = h * g;
        const CacheRows k = contiguous(keys, head_rows(keys, k_first.data(), n, h), buffer,
                                       gathered.data(), call.k_values);
        decode_scores(q + r0 * d, g, k, kernel_dtype_, d, s, kChunk, next_k);
        if (call.alibi != nullptr) add_alibi(call.alibi, r0, g, s, kChunk, n, j, item.len);
        attention_softmax_tile(s, kChunk, g, n, state.m + r0, state.l + r0, corr);
        const CacheRows v = contiguous(values, head_rows(values, v_first.data(), n, h), buffer,
                                       gathered.data(), call.v_values);
        decode_values(s, kChunk, corr, g, v, kernel_dtype_, d, state.o + r0 * d, next_v);
      }
      j += n;
      n = n2;
      std::swap(k_first, k_next);
      std::swap(v_first, v_next);
    }
  }

  // output = Σ_s e^(m_s - M)·o_s / Σ_s e^(m_s - M)·l_s over `count` states `stride` floats apart
  // (one state: o / l). A head that saw no key (an empty sequence) gets zeros; one whose scores
  // held a NaN or +inf (l is NaN) or were all -inf (l is 0) gets NaN, as softmax gives.
  void finish(const HeadState& first, std::int64_t count, std::int64_t stride, std::int64_t b,
              bool sees_keys, const Tensor& output) const {
    const std::int64_t d = shape_.head_size;
    std::vector<float> row(d), natural(d);
    for (std::int64_t h = 0; h < shape_.heads; ++h) {
      float big = kNegInf;
      for (std::int64_t s = 0; s < count; ++s) big = std::max(big, first.m[s * stride + h]);
      std::fill(row.begin(), row.end(), 0.0f);
      float total = 0.0f;
      for (std::int64_t s = 0; s < count && big != kNegInf; ++s) {
        const float m = first.m[s * stride + h];
        if (m == kNegInf && !std::isnan(first.l[s * stride + h])) continue;
        const float w = count == 1 ? 1.0f : std::exp(m - big);
        total += w * first.l[s * stride + h];
        const float* o = first.o + s * stride + h * d;
        for (std::int64_t c = 0; c < d; ++c) row[c] += w * o[c];
      }
      const float inv = total > 0.0f                 ? 1.0f / total
                        : sees_keys || total != 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                                     : 0.0f;
      for (float& x : row) x *= inv;
      decode_column_order(kernel_dtype_, row.data(), 1, d, natural.data(), /*to_kernel=*/false);
      store_f32(natural.data(), element(output, b, h), dtype_, output.stride(2), d);
    }
  }

  // Whether the kernels take the next chunk's prefetch share over their steps. Where vectors
  // execute at 512 bits, only kernels computing at least 4 flops per cached byte (bfloat16 or
  // float16 with groups of 4 or more, float32 with 8) gain from it; at 256 bits or narrower
  // every kernel's steps space the prefetches enough, and all gain (bench/results/cpu-tuning.md).
  static bool kernels_take_share(std::int64_t group, DataType dtype) {
    return cpu_vector_datapath_bits() < 512 ||
           group >= 2 * static_cast<std::int64_t>(size_of(dtype));
  }

  AttentionShape shape_;
  DataType dtype_;         // the query's and the output's
  DataType cache_dtype_;   // dtype_, or an 8-bit float
  DataType kernel_dtype_;  // the rows the kernels read: dtype_, or float32 for an fp8 cache
  std::int64_t cache_size_;
  bool spread_share_;
};

}  // namespace

void register_paged_attention(std::vector<Implementation>& out) {
  out.push_back({"paged_attention", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<PagedAttentionCpu>(p); }});
}

}  // namespace tileops::ops::cpu
