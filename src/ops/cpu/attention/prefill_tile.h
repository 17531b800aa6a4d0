// One work item of flash_attention: a tile of query rows (consecutive positions × the query
// heads of one kv head, so GQA shares every key/value tile across its group) against the packed
// key/value tiles it can see, with the online softmax carried across tiles in float32.
#pragma once

#include <algorithm>
#include <cstdint>

#include "src/ops/cpu/attention/attention_plan.h"
#include "src/ops/cpu/attention/kv_pack.h"
#include "src/ops/cpu/simd/amx_kernels.h"

namespace tileops::ops::cpu {

struct QueryTile {
  std::int64_t sequence_index = 0;
  std::int64_t kv_head = 0;
  std::int64_t first = 0;      // first query position in the sequence
  std::int64_t positions = 0;  // positions in the tile (rows = positions · group)
  std::int64_t cost = 0;       // key tiles visited (for scheduling)
};

struct PrefillCall {
  AttentionShape shape;
  PackedTileShape packed;
  DataType dtype = DataType::kFloat32;
  Tensor query, output;
  // flash_attn_varlen_func's softmax_lse [heads, Tq] float32, when requested (else undefined).
  Tensor softmax_lse;
  // Packed tiles of (sequence, kv head): packed_tiles + tile_offset(b, h)·tile_floats, where the
  // sequence's tiles start at key tile first_tile[b].
  const float* packed_tiles = nullptr;
  const std::int64_t* tile_offset = nullptr;  // [b·kv_heads + h]
  const std::int64_t* first_tile = nullptr;   // [b]
  const Sequence* sequences = nullptr;
  // The bfloat16 path's block product (amx_bf16_block or dpbf16_block); null on the float32 path.
  Bf16BlockFn bf16_block = nullptr;
  // Per packed tile: whether it crosses a mask edge of its sequence and its values hold a NaN or
  // Inf (nonfinite_value_tile).
  const std::uint8_t* nonfinite_values = nullptr;
};

// Whether the key tile [j0, j0 + n) crosses a mask edge of some query row of seq (some row sees
// only part of it) and its packed values (float32, or bfloat16 bits) hold a NaN or Inf. Such a
// tile's masked probabilities are exact zeros, but 0·NaN is NaN: visible_value_product keeps
// its values from rows that do not see them. An integer max over the exponent bits: no branch.
bool nonfinite_value_tile(const AttentionShape& shape, const Sequence& seq, std::int64_t j0,
                          std::int64_t n, const float* values, std::int64_t count);
bool nonfinite_value_tile(const AttentionShape& shape, const Sequence& seq, std::int64_t j0,
                          std::int64_t n, const std::uint16_t* values, std::int64_t count);

// o[r·ldo + c] += Σ p(r, j)·v(j, c) over the keys j of [j0, j0 + n) that row r sees (c < D):
// the PV product of a masked tile whose values hold a NaN or Inf (rare; scalar).
template <typename P, typename V>
void visible_value_product(const AttentionShape& shape, const Sequence& seq, const QueryTile& tile,
                           std::int64_t j0, std::int64_t n, P p, V v, float* o, std::int64_t ldo) {
  for (std::int64_t r = 0; r < tile.positions * shape.group; ++r) {
    const VisibleKeys vk = visible_keys(shape, seq, tile.first + r / shape.group);
    float* out = o + r * ldo;
    for (std::int64_t j = std::max<std::int64_t>(vk.lo - j0, 0); j <= std::min(vk.hi - j0, n - 1);
         ++j) {
      const float pj = p(r, j);
      for (std::int64_t c = 0; c < shape.head_size; ++c) out[c] += pj * v(j, c);
    }
  }
}

// Floats of scratch run_query_tile needs for a tile of `rows` rows.
std::int64_t query_tile_scratch(const PackedTileShape& packed, std::int64_t rows);

// Key tiles [first, last] a tile of query positions [i0, i1) can see (first > last: none).
void visible_key_tiles(const AttentionShape& shape, const Sequence& seq, std::int64_t i0,
                       std::int64_t i1, std::int64_t kv_tile, std::int64_t& first,
                       std::int64_t& last);

// The key range a query tile visits with tiles of kv_tile keys: tiles [first, last]; keys past
// hi_last (the last row's last visible key) are skipped; a tile inside [lo_last, hi_first] needs
// no mask.
struct TileKeys {
  std::int64_t first = 0, last = -1, lo_last = 0, hi_first = 0, hi_last = 0;
};
TileKeys tile_keys(const AttentionShape& shape, const Sequence& seq, const QueryTile& tile,
                   std::int64_t kv_tile);

void run_query_tile(const PrefillCall& call, const QueryTile& tile, float* scratch);

// The tile's output rows: o (row stride ldo) divided by the softmax sums l, rounded to the
// output's dtype; with call.softmax_lse, also each row's log-sum-exp m + log(l) (m: the row's
// running max of the scaled scores).
void store_query_tile(const PrefillCall& call, const QueryTile& tile, float* o, std::int64_t ldo,
                      const float* m, const float* l);

// Scores outside each row's visible keys (and past the last key, up to `width`) of the key tile
// at j0 (n keys) become -inf.
void mask_attention_scores(const AttentionShape& shape, const Sequence& seq, const QueryTile& tile,
                           std::int64_t j0, std::int64_t n, std::int64_t width, float* s,
                           std::int64_t lds);

// The bfloat16 path on AMX or AVX512-BF16 (prefill_tile_bf16.cc): key tiles of bf16_kv_tile keys
// packed as the block products' operands (keys with head_size zero padded to whole K steps of 32,
// then values: bf16_kv_tile_elements bfloat16 per tile; head_size a multiple of 16, at most 256),
// and the query tiles run over them. call.packed_tiles then holds those bfloat16 tiles, call.packed
// is unused.
// Keys per tile: 64 on AMX; 128 on AVX512-BF16, whose block products cost more per call
// (bench/results/cpu-tuning.md).
inline std::int64_t bf16_kv_tile(Bf16BlockFn block) { return block == &amx_bf16_block ? 64 : 128; }
inline std::int64_t bf16_kv_tile_elements(std::int64_t head_size, std::int64_t kv_tile) {
  return kv_tile * ((head_size + 31) / 32 * 32 + head_size);
}
void pack_kv_tile_bf16(const KvRows& keys, const KvRows& values, std::int64_t sequence_index,
                       const Sequence& seq, std::int64_t h, std::int64_t j0, std::int64_t n,
                       std::int64_t head_size, std::int64_t kv_tile, std::uint16_t* tile);
std::int64_t query_tile_scratch_bf16(std::int64_t head_size, std::int64_t rows,
                                     std::int64_t kv_tile);
void run_query_tile_bf16(const PrefillCall& call, const QueryTile& tile, float* scratch);

}  // namespace tileops::ops::cpu
