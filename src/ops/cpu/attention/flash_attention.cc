// flash_attention on CPU in two parallel phases: (1) every key/value tile that some query can see
// is converted to float32 and packed once (kv_pack.h); (2) query tiles run the online softmax
// over their visible key tiles (prefill_tile.h), the most expensive tiles first so that the
// threads, which claim tiles dynamically, finish together under a causal mask. bfloat16 on CPUs
// with AMX or AVX512-BF16 packs bfloat16 block operands instead and runs prefill_tile_bf16.cc.
#include <algorithm>
#include <memory>
#include <vector>

#include "src/ops/contracts/flash_attention.decl.h"
#include "src/ops/cpu/attention/kv_pack.h"
#include "src/ops/cpu/attention/prefill_tile.h"
#include "src/ops/cpu/register.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/attention_kernels.h"
#include "src/ops/cpu/simd/dpbf16_kernels.h"
#include "src/ops/framework/workspace_bytes.h"
#include "tileops/core/checked_size.h"
#include "tileops/runtime/thread_pool.h"
#include "tileops/runtime/workspace_pool.h"

namespace tileops::ops::cpu {
namespace {

// Argument positions, by name from the declaration (src/ops/contracts/flash_attention.decl.h).
constexpr int kQuery = tensor_index(decls::flash_attention, "query");
constexpr int kKey = tensor_index(decls::flash_attention, "key");
constexpr int kValue = tensor_index(decls::flash_attention, "value");
constexpr int kCuSeqlensQ = tensor_index(decls::flash_attention, "cu_seqlens_q");
constexpr int kCuSeqlensKv = tensor_index(decls::flash_attention, "cu_seqlens_kv");
constexpr int kBlockTable = tensor_index(decls::flash_attention, "block_table");
constexpr int kOutput = tensor_index(decls::flash_attention, "output");
constexpr int kSoftmaxLse = tensor_index(decls::flash_attention, "softmax_lse");

constexpr std::int64_t kKvTileStrips = 4;    // key tile = 4 strips (96 keys on AVX2)
constexpr std::int64_t kQueryTileRows = 64;  // rows (positions × group heads) per query tile

class FlashAttentionCpu final : public Operator {
 public:
  explicit FlashAttentionCpu(const Problem& problem)
      : shape_(AttentionShape::of(problem)), dtype_(problem.tensors[kQuery].dtype) {
    packed_.nr = attention_nr();
    packed_.kv_tile = kKvTileStrips * packed_.nr;
    packed_.head_size = shape_.head_size;
    packed_.padded_size = round_up(shape_.head_size, packed_.nr);
    positions_per_tile_ = std::max<std::int64_t>(1, kQueryTileRows / shape_.group);
  }

  void run(std::span<const Tensor> tensors, const Context& ctx) const override {
    const Tensor& query = tensors[kQuery];
    const Tensor& cu_q = tensors[kCuSeqlensQ];
    const Tensor& cu_kv = tensors[kCuSeqlensKv];
    const Tensor& block_table = tensors[kBlockTable];
    // bfloat16 on AMX tiles or AVX512-BF16 dot products where the CPU has them (head sizes of
    // whole 16-column strips).
    Bf16BlockFn bf16_block = nullptr;
    if (dtype_ == DataType::kBFloat16 && shape_.head_size % kAmxCols == 0 &&
        shape_.head_size <= 256) {
      if (amx_bf16_enabled()) {
        bf16_block = &amx_bf16_block;
      } else if (dpbf16_enabled()) {
        bf16_block = &dpbf16_block;
      }
    }
    const bool pairs = bf16_block != nullptr;
    const std::int64_t kv_tile = pairs ? bf16_kv_tile(bf16_block) : packed_.kv_tile;
    // Floats per packed tile: float32 strips, or bfloat16 keys and values.
    const std::int64_t tile_floats =
        pairs ? (bf16_kv_tile_elements(shape_.head_size, kv_tile) + 1) / 2 : packed_.tile_floats();
    const std::vector<Sequence> sequences =
        read_sequences(query, tensors[kKey], cu_q, cu_kv, block_table);
    const auto batch = static_cast<std::int64_t>(sequences.size());
    const std::int64_t kv_heads = shape_.kv_heads;

    // Key tiles each sequence's queries can see, and where their packed copies go.
    std::vector<std::int64_t> first_tile(batch), tile_count(batch), tile_offset(batch * kv_heads);
    std::vector<QueryTile> work;
    std::int64_t total_tiles = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      const Sequence& seq = sequences[b];
      std::int64_t first = 0, last = -1;
      visible_key_tiles(shape_, seq, 0, seq.q_len, kv_tile, first, last);
      first_tile[b] = first;
      tile_count[b] = std::max<std::int64_t>(0, last - first + 1);
      for (std::int64_t h = 0; h < kv_heads; ++h) {
        tile_offset[b * kv_heads + h] = total_tiles;
        total_tiles += tile_count[b];
        for (std::int64_t i = 0; i < seq.q_len; i += positions_per_tile_) {
          QueryTile t{b, h, i, std::min(positions_per_tile_, seq.q_len - i), 0};
          std::int64_t f = 0, l = -1;
          visible_key_tiles(shape_, seq, t.first, t.first + t.positions, kv_tile, f, l);
          t.cost = l - f + 2;  // +1: the query rows' own load and store
          work.push_back(t);
        }
      }
    }
    std::stable_sort(work.begin(), work.end(),
                     [](const QueryTile& a, const QueryTile& b) { return a.cost > b.cost; });

    ThreadPool& pool = ctx.threads();
    const std::int64_t threads = pool.num_threads();
    const std::int64_t rows = positions_per_tile_ * shape_.group;
    const std::int64_t scratch =
        round_up(std::max(pairs ? query_tile_scratch_bf16(shape_.head_size, rows, kv_tile)
                                : query_tile_scratch(packed_, rows),
                          shape_.head_size),
                 16);
    WorkspacePool::Lease lease = ctx.workspace().acquire(
        kCpu, ctx.stream, 0,
        workspace_bytes({{total_tiles, tile_floats}, {threads, scratch}, {16}}, sizeof(float),
                        "flash_attention: argument 'query'"));
    float* tiles = lease.as<float>();
    float* thread_scratch = tiles + total_tiles * tile_floats;

    const KvRows keys(tensors[kKey], block_table, shape_.block_size);
    const KvRows values(tensors[kValue], block_table, shape_.block_size);
    // Phase 1: pack (sequence, kv head, key tile) items.
    std::vector<std::uint8_t> nonfinite(total_tiles, 0);
    pool.parallel_claim(total_tiles, [&](int chunk, std::int64_t item) {
      const auto it = std::upper_bound(tile_offset.begin(), tile_offset.end(), item) - 1;
      const std::int64_t bh = it - tile_offset.begin();
      const std::int64_t b = bh / kv_heads;
      const std::int64_t kt = first_tile[b] + (item - *it);
      const std::int64_t j0 = kt * kv_tile;
      const std::int64_t n = std::min(kv_tile, sequences[b].kv_len - j0);
      float* tile = tiles + item * tile_floats;
      if (pairs) {
        auto* bf16 = reinterpret_cast<std::uint16_t*>(tile);
        pack_kv_tile_bf16(keys, values, b, sequences[b], bh % kv_heads, j0, n, shape_.head_size,
                          kv_tile, bf16);
        const std::int64_t key_elements = kv_tile * round_up(shape_.head_size, kAmxK);
        nonfinite[item] = nonfinite_value_tile(shape_, sequences[b], j0, n, bf16 + key_elements,
                                               kv_tile * shape_.head_size);
      } else {
        pack_kv_tile(keys, values, dtype_, b, sequences[b], bh % kv_heads, j0, n, packed_, tile,
                     thread_scratch + chunk * scratch);
        nonfinite[item] = nonfinite_value_tile(shape_, sequences[b], j0, n,
                                               tile + packed_.key_floats(), packed_.value_floats());
      }
    });
    // Phase 2: query tiles.
    PrefillCall call{shape_,
                     packed_,
                     dtype_,
                     query,
                     tensors[kOutput],
                     tensors[kSoftmaxLse],
                     tiles,
                     tile_offset.data(),
                     first_tile.data(),
                     sequences.data(),
                     bf16_block,
                     nonfinite.data()};
    pool.parallel_claim(static_cast<std::int64_t>(work.size()), [&](int chunk, std::int64_t i) {
      if (pairs) {
        run_query_tile_bf16(call, work[i], thread_scratch + chunk * scratch);
      } else {
        run_query_tile(call, work[i], thread_scratch + chunk * scratch);
      }
    });
  }

 private:
  std::vector<Sequence> read_sequences(const Tensor& query, const Tensor& key, const Tensor& cu_q,
                                       const Tensor& cu_kv, const Tensor& block_table) const {
    const bool has_q = attention_present(cu_q);
    const bool has_kv = attention_present(cu_kv);
    std::int64_t batch = 1;
    if (has_q)
      batch = cu_q.size(0) - 1;
    else if (has_kv)
      batch = cu_kv.size(0) - 1;
    const bool paged = shape_.block_size > 0;
    std::vector<Sequence> out(batch);
    for (std::int64_t b = 0; b < batch; ++b) {
      Sequence& s = out[b];
      s.q_start = has_q ? index_at(cu_q, b) : 0;
      s.q_len = has_q ? index_at(cu_q, b + 1) - s.q_start : query.size(0);
      if (has_kv) {
        s.kv_start = paged ? 0 : index_at(cu_kv, b);
        s.kv_len = index_at(cu_kv, b + 1) - index_at(cu_kv, b);
      } else {
        s.kv_len = paged ? block_table.size(1) * shape_.block_size : key.size(0);
      }
    }
    return out;
  }

  static bool attention_present(const Tensor& t) { return t.data() != nullptr || t.rank() != 0; }

  AttentionShape shape_;
  DataType dtype_;
  PackedTileShape packed_;
  std::int64_t positions_per_tile_ = 1;
};

}  // namespace

void register_flash_attention(std::vector<Implementation>& out) {
  out.push_back({"flash_attention", DeviceType::kCpu, 0, "native",
                 [](const Problem& p) { return std::make_unique<FlashAttentionCpu>(p); }});
}

}  // namespace tileops::ops::cpu
