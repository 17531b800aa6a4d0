#include "src/ops/cpu/attention/prefill_tile.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "src/ops/cpu/simd/attention_kernels.h"
#include "src/ops/cpu/simd/convert.h"
#include "tileops/core/checked_size.h"

namespace tileops::ops::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

// Scores outside each row's visible keys (and past the last key) become -inf. Only the tiles
// that cross a mask boundary or the end of the keys get here.
void mask_attention_scores(const AttentionShape& shape, const Sequence& seq, const QueryTile& tile,
                           std::int64_t j0, std::int64_t n, std::int64_t width, float* s,
                           std::int64_t lds) {
  const std::int64_t rows = tile.positions * shape.group;
  for (std::int64_t r = 0; r < rows; ++r) {
    const VisibleKeys vk = visible_keys(shape, seq, tile.first + r / shape.group);
    const std::int64_t lo = std::clamp<std::int64_t>(vk.lo - j0, 0, width);
    const std::int64_t hi = std::clamp<std::int64_t>(std::min(vk.hi - j0 + 1, n), lo, width);
    float* row = s + r * lds;
    std::fill(row, row + lo, kNegInf);
    std::fill(row + hi, row + width, kNegInf);
  }
}

namespace {

// Exponent bits all ones: NaN or Inf.
bool any_nonfinite(const float* x, std::int64_t count) {
  std::uint32_t top = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    top = std::max(top, std::bit_cast<std::uint32_t>(x[i]) & 0x7f800000u);
  }
  return top == 0x7f800000u;
}
bool any_nonfinite(const std::uint16_t* bf16, std::int64_t count) {
  std::uint16_t top = 0;
  for (std::int64_t i = 0; i < count; ++i) top = std::max<std::uint16_t>(top, bf16[i] & 0x7f80u);
  return top == 0x7f80u;
}

bool crosses_mask_edge(const AttentionShape& shape, const Sequence& seq, std::int64_t j0,
                       std::int64_t n) {
  // lo and hi never decrease with the row: the first row's hi and the last row's lo bound all.
  return j0 < visible_keys(shape, seq, seq.q_len - 1).lo ||
         j0 + n - 1 > visible_keys(shape, seq, 0).hi;
}

}  // namespace

bool nonfinite_value_tile(const AttentionShape& shape, const Sequence& seq, std::int64_t j0,
                          std::int64_t n, const float* values, std::int64_t count) {
  return crosses_mask_edge(shape, seq, j0, n) && any_nonfinite(values, count);
}

bool nonfinite_value_tile(const AttentionShape& shape, const Sequence& seq, std::int64_t j0,
                          std::int64_t n, const std::uint16_t* values, std::int64_t count) {
  return crosses_mask_edge(shape, seq, j0, n) && any_nonfinite(values, count);
}

std::int64_t query_tile_scratch(const PackedTileShape& packed, std::int64_t rows) {
  const std::int64_t rows_pad = round_up(rows, kAttentionMr);
  return rows_pad * (packed.head_size + packed.kv_tile + packed.padded_size + 3) + 16;
}

void visible_key_tiles(const AttentionShape& shape, const Sequence& seq, std::int64_t i0,
                       std::int64_t i1, std::int64_t kv_tile, std::int64_t& first,
                       std::int64_t& last) {
  // lo and hi never decrease with the row, so the tile's range is [lo(i0), hi(i1 - 1)].
  const std::int64_t lo = visible_keys(shape, seq, i0).lo;
  const std::int64_t hi = visible_keys(shape, seq, i1 - 1).hi;
  if (i1 <= i0 || hi < lo || hi < 0 || seq.kv_len == 0) {
    first = 0;
    last = -1;
    return;
  }
  first = lo / kv_tile;
  last = hi / kv_tile;
}

TileKeys tile_keys(const AttentionShape& shape, const Sequence& seq, const QueryTile& tile,
                   std::int64_t kv_tile) {
  TileKeys out;
  const std::int64_t last_row = tile.first + tile.positions - 1;
  visible_key_tiles(shape, seq, tile.first, last_row + 1, kv_tile, out.first, out.last);
  out.lo_last = visible_keys(shape, seq, last_row).lo;
  out.hi_first = visible_keys(shape, seq, tile.first).hi;
  out.hi_last = visible_keys(shape, seq, last_row).hi;
  return out;
}

void run_query_tile(const PrefillCall& call, const QueryTile& tile, float* scratch) {
  const AttentionShape& shape = call.shape;
  const PackedTileShape& packed = call.packed;
  const Sequence& seq = call.sequences[tile.sequence_index];
  const std::int64_t d = shape.head_size;
  const std::int64_t d_pad = packed.padded_size;
  const std::int64_t nk = packed.kv_tile;
  const std::int64_t nr = packed.nr;
  const std::int64_t rows = tile.positions * shape.group;
  const std::int64_t rows_pad = round_up(rows, kAttentionMr);
  float* q = scratch;
  float* s = q + rows_pad * d;
  float* o = s + rows_pad * nk;
  float* m = o + rows_pad * d_pad;
  float* l = m + rows_pad;
  float* corr = l + rows_pad;

  // Query rows (position-major, the group's heads inside), scaled once here instead of per score.
  const Tensor& query = call.query;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t t = seq.q_start + tile.first + r / shape.group;
    const std::int64_t head = tile.kv_head * shape.group + r % shape.group;
    const auto* src = static_cast<const char*>(query.data()) +
                      (t * query.stride(0) + head * query.stride(1)) *
                          static_cast<std::int64_t>(query.element_size());
    float* row = q + r * d;
    load_f32(src, call.dtype, query.stride(2), d, row);
    for (std::int64_t c = 0; c < d; ++c) row[c] *= shape.scale;
  }
  std::fill(q + rows * d, q + rows_pad * d, 0.0f);
  std::fill(o, o + rows_pad * d_pad, 0.0f);
  std::fill(m, m + rows_pad, kNegInf);
  std::fill(l, l + rows_pad, 0.0f);

  const TileKeys keys = tile_keys(shape, seq, tile, nk);
  const std::int64_t first_tile = keys.first, last_tile = keys.last;
  const std::int64_t lo_last = keys.lo_last, hi_first = keys.hi_first, hi_last = keys.hi_last;
  const std::int64_t tile0 = call.tile_offset[tile.sequence_index * shape.kv_heads + tile.kv_head] -
                             call.first_tile[tile.sequence_index];  // index of key tile 0
  const float* tiles =
      call.packed_tiles +
      call.tile_offset[tile.sequence_index * shape.kv_heads + tile.kv_head] * packed.tile_floats();
  for (std::int64_t kt = first_tile; kt <= last_tile; ++kt) {
    const std::int64_t j0 = kt * nk;
    // Strips past the last row's last visible key (the causal diagonal) are skipped.
    const std::int64_t n = std::min({nk, seq.kv_len - j0, hi_last + 1 - j0});
    const std::int64_t strips = (n + nr - 1) / nr;
    const std::int64_t width = strips * nr;
    const float* packed_tile =
        tiles + (kt - call.first_tile[tile.sequence_index]) * packed.tile_floats();
    attention_tile_product(q, d, rows_pad / kAttentionMr, packed_tile, packed.key_strip(), strips,
                           nr, d, s, nk, false);
    // Interior tiles (every row sees every key) skip the mask.
    const bool masked = width != n || j0 < lo_last || j0 + n - 1 > hi_first;
    if (masked) mask_attention_scores(shape, seq, tile, j0, n, width, s, nk);
    attention_softmax_tile(s, nk, rows_pad, width, m, l, corr);
    attention_scale_rows(o, d_pad, rows_pad, d, corr);
    const float* values = packed_tile + packed.key_floats();
    if (masked && call.nonfinite_values[tile0 + kt] != 0) {
      visible_value_product(
          shape, seq, tile, j0, n, [&](std::int64_t r, std::int64_t j) { return s[r * nk + j]; },
          [&](std::int64_t j, std::int64_t c) {
            return values[c / nr * packed.value_strip() + j * nr + c % nr];
          },
          o, d_pad);
      continue;
    }
    // Only the head's d columns of the last value strip are computed (d_pad - d are padding).
    attention_tile_product(s, nk, rows_pad / kAttentionMr, values, packed.value_strip(), d_pad / nr,
                           d - (d_pad - nr), width, o, d_pad, true);
  }

  store_query_tile(call, tile, o, d_pad, m, l);
}

void store_query_tile(const PrefillCall& call, const QueryTile& tile, float* o, std::int64_t ldo,
                      const float* m, const float* l) {
  const AttentionShape& shape = call.shape;
  const Sequence& seq = call.sequences[tile.sequence_index];
  const Tensor& output = call.output;
  auto* lse = static_cast<float*>(call.softmax_lse.data());
  for (std::int64_t r = 0; r < tile.positions * shape.group; ++r) {
    const std::int64_t t = seq.q_start + tile.first + r / shape.group;
    const std::int64_t head = tile.kv_head * shape.group + r % shape.group;
    if (lse != nullptr) {
      // No visible key (or all -inf): m = -inf, l = 0, so -inf; l NaN after a NaN or +inf score.
      lse[head * call.softmax_lse.stride(0) + t * call.softmax_lse.stride(1)] =
          m[r] + std::log(l[r]);
    }
    auto* dst =
        static_cast<char*>(output.data()) + (t * output.stride(0) + head * output.stride(1)) *
                                                static_cast<std::int64_t>(output.element_size());
    float* row = o + r * ldo;
    // l is NaN after a NaN or +inf score, 0 when no key is visible (zeros) or when every visible
    // score is -inf (NaN, as softmax gives).
    const VisibleKeys vk = visible_keys(shape, seq, tile.first + r / shape.group);
    const float inv = l[r] > 0.0f                      ? 1.0f / l[r]
                      : vk.lo <= vk.hi || l[r] != 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                                       : 0.0f;
    for (std::int64_t c = 0; c < shape.head_size; ++c) row[c] *= inv;
    store_f32(row, dst, call.dtype, output.stride(2), shape.head_size);
  }
}

}  // namespace tileops::ops::cpu
