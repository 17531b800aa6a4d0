// Keys and values of one (sequence, kv head) packed as float32 tiles of kv_tile keys, once per
// call, so that every query tile of the group reuses them: the keys transposed into strips of Nr
// keys ([d][Nr], the B operand of QKᵀ), the values into strips of Nr columns ([key][Nr], the B
// operand of PV, head_size padded to a multiple of Nr with zeros).
#pragma once

#include <cstdint>

#include "src/ops/cpu/attention/attention_plan.h"

namespace tileops::ops::cpu {

struct PackedTileShape {
  std::int64_t nr = 0;           // columns of a strip
  std::int64_t kv_tile = 0;      // keys per tile (a multiple of nr)
  std::int64_t head_size = 0;    // D
  std::int64_t padded_size = 0;  // D rounded up to nr

  std::int64_t key_floats() const { return kv_tile * head_size; }
  std::int64_t value_floats() const { return kv_tile * padded_size; }
  std::int64_t tile_floats() const { return key_floats() + value_floats(); }
  // Strip strides inside a tile.
  std::int64_t key_strip() const { return head_size * nr; }
  std::int64_t value_strip() const { return kv_tile * nr; }
};

// Packs keys [j0, j0 + n) (n <= kv_tile; the rest of the tile is zero) of kv head h into
// `tile` (tile_floats() floats: keys first, then values). `row` is scratch of head_size floats.
void pack_kv_tile(const KvRows& keys, const KvRows& values, DataType dtype,
                  std::int64_t sequence_index, const Sequence& seq, std::int64_t h, std::int64_t j0,
                  std::int64_t n, const PackedTileShape& shape, float* tile, float* row);

}  // namespace tileops::ops::cpu
