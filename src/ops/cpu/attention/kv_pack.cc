#include "src/ops/cpu/attention/kv_pack.h"

#include <algorithm>

#include "src/ops/cpu/simd/convert.h"

namespace tileops::ops::cpu {

void pack_kv_tile(const KvRows& keys, const KvRows& values, DataType dtype,
                  std::int64_t sequence_index, const Sequence& seq, std::int64_t h, std::int64_t j0,
                  std::int64_t n, const PackedTileShape& shape, float* tile, float* row) {
  const std::int64_t nr = shape.nr;
  const std::int64_t d = shape.head_size;
  float* key_tile = tile;
  float* value_tile = tile + shape.key_floats();
  if (n < shape.kv_tile) {
    std::fill(tile, tile + shape.tile_floats(), 0.0f);  // the keys past n read as zeros
  } else {
    // A full tile overwrites everything but the padding columns of the last value strip.
    const std::int64_t last = (shape.padded_size / nr - 1) * nr;
    float* strip = value_tile + (last / nr) * shape.value_strip();
    for (std::int64_t jj = 0; jj < n; ++jj) {
      std::fill(strip + jj * nr + (d - last), strip + (jj + 1) * nr, 0.0f);
    }
  }
  for (std::int64_t jj = 0; jj < n; ++jj) {
    const std::int64_t j = j0 + jj;
    const float* k = row_f32(keys.row(sequence_index, seq, h, j), dtype, keys.d_stride(), d, row);
    float* key_strip = key_tile + (jj / nr) * shape.key_strip() + jj % nr;
    for (std::int64_t c = 0; c < d; ++c) key_strip[c * nr] = k[c];
    const float* v =
        row_f32(values.row(sequence_index, seq, h, j), dtype, values.d_stride(), d, row);
    float* value_row = value_tile + jj * nr;
    for (std::int64_t c0 = 0; c0 < d; c0 += nr) {
      std::copy(v + c0, v + std::min(d, c0 + nr), value_row + (c0 / nr) * shape.value_strip());
    }
  }
}

}  // namespace tileops::ops::cpu
