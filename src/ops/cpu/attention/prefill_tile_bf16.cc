// flash_attention's bfloat16 path on CPUs with AMX (amx_kernels.h) or AVX512-BF16
// (dpbf16_kernels.h): key/value tiles packed as bfloat16 block operands, S = Q·Kᵀ and O += P·V as
// block products (call.bf16_block) with float32 results, the online
// softmax in float32 as on the vector path (prefill_tile.cc). P is rounded to bfloat16 for its
// product as the softmax computes it (the sum l keeps the float32 probabilities).
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "src/ops/cpu/attention/prefill_tile.h"
#include "src/ops/cpu/simd/amx_kernels.h"
#include "src/ops/cpu/simd/attention_kernels.h"
#include "tileops/core/checked_size.h"

namespace tileops::ops::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr std::int64_t kPrefetchAhead = 8;  // cache rows

}  // namespace

void pack_kv_tile_bf16(const KvRows& keys, const KvRows& values, std::int64_t sequence_index,
                       const Sequence& seq, std::int64_t h, std::int64_t j0, std::int64_t n,
                       std::int64_t head_size, std::int64_t kv_tile, std::uint16_t* tile) {
  const std::int64_t d = head_size;
  const std::int64_t dk = round_up(d, kAmxK);  // keys' rows past d stay zero
  const std::int64_t k_stride = keys.d_stride(), v_stride = values.d_stride();
  std::uint16_t* key_strips = tile;
  std::uint16_t* value_strips = tile + kv_tile * dk;
  if (n < kv_tile || dk != d) {
    std::fill(tile, tile + bf16_kv_tile_elements(d, kv_tile), std::uint16_t{0});
  }
  // Contiguous rows (the usual cache): whole 32-bit pairs at a time, two keys' values at once.
  if (k_stride == 1 && v_stride == 1) {
    auto* key_words = reinterpret_cast<std::uint32_t*>(key_strips);
    auto* value_words = reinterpret_cast<std::uint32_t*>(value_strips);
    // Rows of one head are a row of all heads apart: the hardware prefetcher does not follow
    // them, so the kPrefetchAhead-th next row is fetched while this one is packed.
    const auto fetch = [&](const KvRows& kv, std::int64_t jj) {
      if (jj >= n) return;
      const auto* row = static_cast<const char*>(kv.row(sequence_index, seq, h, j0 + jj));
      for (std::int64_t b = 0; b < 2 * d; b += 64) __builtin_prefetch(row + b, 0, 3);
    };
    for (std::int64_t jj = 0; jj < std::min(n, kPrefetchAhead); ++jj) fetch(values, jj);
    for (std::int64_t jj = 0; jj < n; ++jj) {
      fetch(keys, jj + kPrefetchAhead);
      const auto* k = static_cast<const char*>(keys.row(sequence_index, seq, h, j0 + jj));
      // Key jj's pair (c, c + 1) is word c / 2·16 + jj % 16 of its strip.
      std::uint32_t* kw = key_words + jj / kAmxCols * dk / 2 * kAmxCols + jj % kAmxCols;
      for (std::int64_t c2 = 0; c2 < d / 2; ++c2) std::memcpy(kw + c2 * kAmxCols, k + 4 * c2, 4);
    }
    for (std::int64_t jj = 0; jj < n; jj += 2) {
      fetch(values, jj + kPrefetchAhead);
      fetch(values, jj + kPrefetchAhead + 1);
      const auto* v0 =
          static_cast<const std::uint16_t*>(values.row(sequence_index, seq, h, j0 + jj));
      const auto* v1 =
          jj + 1 < n
              ? static_cast<const std::uint16_t*>(values.row(sequence_index, seq, h, j0 + jj + 1))
              : nullptr;
      // Keys (jj, jj + 1) of column c are word jj / 2·16 + c % 16 of strip c / 16.
      std::uint32_t* vw = value_words + jj / 2 * kAmxCols;
      for (std::int64_t c0 = 0; c0 < d; c0 += kAmxCols) {
        std::uint32_t* out = vw + c0 / kAmxCols * kv_tile / 2 * kAmxCols;
        for (std::int64_t c = 0; c < kAmxCols; ++c) {
          const std::uint32_t high = v1 != nullptr ? v1[c0 + c] : 0u;
          out[c] = v0[c0 + c] | high << 16;
        }
      }
    }
    return;
  }
  for (std::int64_t jj = 0; jj < n; ++jj) {
    const auto* k = static_cast<const std::uint16_t*>(keys.row(sequence_index, seq, h, j0 + jj));
    const auto* v = static_cast<const std::uint16_t*>(values.row(sequence_index, seq, h, j0 + jj));
    // Keys as B strips of 16 keys (Kᵀ: element (c, key) at [c / 2·32 + 2·key + c % 2]).
    std::uint16_t* ks = key_strips + jj / kAmxCols * dk * kAmxCols + 2 * (jj % kAmxCols);
    for (std::int64_t c = 0; c < d; c += 2) {
      ks[c * kAmxCols] = k[c * k_stride];
      ks[c * kAmxCols + 1] = k[(c + 1) * k_stride];
    }
    // Values as B strips of 16 columns (element (key, c) at [key / 2·32 + 2·c + key % 2]).
    std::uint16_t* vs = value_strips + jj / 2 * 2 * kAmxCols + jj % 2;
    for (std::int64_t c0 = 0; c0 < d; c0 += kAmxCols) {
      std::uint16_t* strip = vs + c0 / kAmxCols * kv_tile * kAmxCols;
      for (std::int64_t c = 0; c < kAmxCols; ++c) strip[2 * c] = v[(c0 + c) * v_stride];
    }
  }
}

std::int64_t query_tile_scratch_bf16(std::int64_t head_size, std::int64_t rows,
                                     std::int64_t kv_tile) {
  const std::int64_t rows_pad = round_up(rows, kAmxRows);
  // q and p tiles (bfloat16), s, o, m, l, corr, the scale per row.
  return rows_pad * (round_up(head_size, kAmxK) / 2 + kv_tile / 2 + kv_tile + head_size + 4) + 16;
}

void run_query_tile_bf16(const PrefillCall& call, const QueryTile& tile, float* scratch) {
  const AttentionShape& shape = call.shape;
  const Sequence& seq = call.sequences[tile.sequence_index];
  const std::int64_t d = shape.head_size;
  const std::int64_t dk = round_up(d, kAmxK);  // S's contraction, zero padded
  const std::int64_t nk = bf16_kv_tile(call.bf16_block);
  const std::int64_t rows = tile.positions * shape.group;
  const std::int64_t rows_pad = round_up(rows, kAmxRows);
  auto* q = reinterpret_cast<std::uint16_t*>(scratch);  // row tiles of Q: [r/16][c/32][16][32]
  auto* p = q + rows_pad * dk;                          // row tiles of P, 2 K steps
  float* s = scratch + rows_pad * (dk + nk) / 2;
  float* o = s + rows_pad * nk;
  float* m = o + rows_pad * d;
  float* l = m + rows_pad;
  float* corr = l + rows_pad;
  float* scale = corr + rows_pad;
  std::fill(scale, scale + rows_pad, shape.scale);
  const bool fold_scale = shape.scale > 0.0f;

  // Query rows (position-major, the group's heads inside), unscaled: the scale multiplies S.
  const Tensor& query = call.query;
  const std::int64_t q_stride = query.stride(2);
  std::fill(q, q + rows_pad * dk, std::uint16_t{0});
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t t = seq.q_start + tile.first + r / shape.group;
    const std::int64_t head = tile.kv_head * shape.group + r % shape.group;
    const auto* src = static_cast<const std::uint16_t*>(query.data()) + t * query.stride(0) +
                      head * query.stride(1);
    std::uint16_t* row = q + r / kAmxRows * kAmxRows * dk + r % kAmxRows * kAmxK;
    if (q_stride == 1) {  // a K step's kAmxK columns are contiguous on both sides
      for (std::int64_t c = 0; c < d; c += kAmxK) {
        std::memcpy(row + c / kAmxK * kAmxRows * kAmxK, src + c,
                    static_cast<std::size_t>(std::min(kAmxK, d - c)) * 2);
      }
      continue;
    }
    for (std::int64_t c = 0; c < d; ++c) {
      row[c / kAmxK * kAmxRows * kAmxK + c % kAmxK] = src[c * q_stride];
    }
  }
  std::fill(p, p + rows_pad * nk, std::uint16_t{0});
  std::fill(o, o + rows_pad * d, 0.0f);
  std::fill(m, m + rows_pad, kNegInf);
  std::fill(l, l + rows_pad, 0.0f);

  const TileKeys keys = tile_keys(shape, seq, tile, nk);
  const std::int64_t first_tile = keys.first, last_tile = keys.last;
  const std::int64_t lo_last = keys.lo_last, hi_first = keys.hi_first, hi_last = keys.hi_last;
  const std::int64_t tile_elements = bf16_kv_tile_elements(d, nk);
  const std::int64_t tile0 = call.tile_offset[tile.sequence_index * shape.kv_heads + tile.kv_head] -
                             call.first_tile[tile.sequence_index];  // index of key tile 0
  const auto* tiles =
      reinterpret_cast<const std::uint16_t*>(call.packed_tiles) +
      call.tile_offset[tile.sequence_index * shape.kv_heads + tile.kv_head] * tile_elements;
  for (std::int64_t kt = first_tile; kt <= last_tile; ++kt) {
    const std::int64_t j0 = kt * nk;
    // Key strips past the last row's last visible key (the causal diagonal) are skipped.
    const std::int64_t n = std::min({nk, seq.kv_len - j0, hi_last + 1 - j0});
    const std::int64_t strips = (n + kAmxCols - 1) / kAmxCols;
    const std::int64_t width = strips * kAmxCols;
    const std::uint16_t* packed =
        tiles + (kt - call.first_tile[tile.sequence_index]) * tile_elements;
    call.bf16_block(q, rows_pad, dk, packed, strips, s, nk, false);
    // A positive scale is applied by the softmax, after the mask; a negative one first, as the
    // mask's -inf must stay -inf.
    if (!fold_scale) attention_scale_rows(s, nk, rows_pad, width, scale);
    const bool masked = width != n || j0 < lo_last || j0 + n - 1 > hi_first;
    if (masked) mask_attention_scores(shape, seq, tile, j0, n, width, s, nk);
    // P as row tiles of bfloat16 over all nk keys (zeros past width: the values there are zero
    // but stale probabilities could be NaN).
    attention_softmax_tile_bf16(s, nk, rows_pad, width, fold_scale ? shape.scale : 1.0f, m, l, corr,
                                p, nk);
    attention_scale_rows(o, d, rows_pad, d, corr);
    const std::uint16_t* values = packed + nk * dk;
    if (masked && call.nonfinite_values[tile0 + kt] != 0) {
      // The layouts of P (attention_softmax_tile_bf16) and of the values (pack_kv_tile_bf16).
      const auto bf16 = [](std::uint16_t x) {
        return std::bit_cast<float>(std::uint32_t{x} << 16);
      };
      visible_value_product(
          shape, seq, tile, j0, n,
          [&](std::int64_t r, std::int64_t j) {
            return bf16(p[r / kAmxRows * kAmxRows * nk + j / 32 * kAmxRows * 32 +
                          r % kAmxRows * 32 + j % 32]);
          },
          [&](std::int64_t j, std::int64_t c) {
            return bf16(values[c / kAmxCols * nk * kAmxCols + j / 2 * 2 * kAmxCols +
                               2 * (c % kAmxCols) + j % 2]);
          },
          o, d);
      continue;
    }
    call.bf16_block(p, rows_pad, nk, values, d / kAmxCols, o, d, true);
  }

  store_query_tile(call, tile, o, d, m, l);
}

}  // namespace tileops::ops::cpu
