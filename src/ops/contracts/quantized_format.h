// The quantized weight format shared by quantize_weight (which writes it) and linear_quantized
// (which reads it): a 64-byte header, then the weight in tiles of kQuantizedTileRows rows. A
// tile holds, group by group along K, one block: the rows' float32 scales (and, with zero
// points, their float32 zero points), then the rows' codes of that group, interleaved in runs.
// So a tile is one sequential stream whose scales sit next to their codes, and one load of x
// feeds all the rows of the tile (layout in docs/quantized-weights.md). The buffer is untrusted
// input: every use re-reads and validates the header against the buffer's size.
#pragma once

#include <cstdint>
#include <string_view>

namespace tileops::ops {

inline constexpr std::uint32_t kQuantizedMagic = 0x57514f54;  // "TOQW" in memory order
inline constexpr std::uint16_t kQuantizedVersion = 2;
inline constexpr std::int64_t kQuantizedHeaderBytes = 64;
inline constexpr std::int64_t kQuantizedTileRows = 4;
// Per-channel rows are padded with zero codes to this multiple of K: every group is then a
// whole number of vectors on every SIMD target, and of runs.
inline constexpr std::int64_t kQuantizedKAlign = 64;
// A block's codes: each row's codes of the group cut into runs of min(64, row_code_bytes) bytes
// (a whole number of runs in every format), run j of the 4 rows one after the other. A per-channel
// block (a whole row each) is then one sequential stream rather than four streams a row apart,
// which end before the hardware prefetchers lock on (int8 decode of the 1.1B model: 1.12-1.2x on
// one thread, Zen 4; docs/quantized-weights.md). Rows of at most 64 bytes per group are one run.
inline constexpr std::int64_t kQuantizedRunBytes = 64;

struct QuantizedLayout {
  std::int64_t n = 0, k = 0;
  int bits = 8;
  int group_size = 0;  // as given: 0 = one group per row (int8 only)
  bool symmetric = true;
  std::int64_t k_padded = 0;        // K, or K rounded up to kQuantizedKAlign per channel
  std::int64_t group = 0;           // K elements per group: group_size, or k_padded
  std::int64_t groups_per_row = 0;  // k_padded / group
  std::int64_t tiles = 0;       // ceil(n / kQuantizedTileRows); the last tile's extra rows are 0
  std::int64_t meta_bytes = 0;  // per block: the scales (and zero points)
  std::int64_t row_code_bytes = 0;  // per row of a block: group · bits / 8
  std::int64_t run_bytes = 0;       // min(kQuantizedRunBytes, row_code_bytes)
  std::int64_t block_bytes = 0;
  std::int64_t total_bytes = 0;

  bool has_zeros() const { return !symmetric; }
  // Byte offset of tile t's block of group g from the start of the buffer.
  std::int64_t block_offset(std::int64_t t, std::int64_t g) const {
    return kQuantizedHeaderBytes + (t * groups_per_row + g) * block_bytes;
  }
  // Byte offset of byte i of row r's codes from a block's first code byte (after the meta).
  std::int64_t code_offset(std::int64_t r, std::int64_t i) const {
    return i / run_bytes * kQuantizedTileRows * run_bytes + r * run_bytes + i % run_bytes;
  }
};

// The layout of an [n, k] weight quantized with these attributes; an invalid combination or a
// size beyond int64 throws InvalidArgument naming `op` and the argument. Valid: bits 8 with
// group_size 0 (per channel), 32, 64 or 128, symmetric; bits 4 with group_size 32, 64 or 128,
// symmetric or not; n, k >= 1; k a multiple of a nonzero group_size.
QuantizedLayout quantized_layout(std::string_view op, std::int64_t n, std::int64_t k, int bits,
                                 std::int64_t group_size, bool symmetric);

void write_quantized_header(const QuantizedLayout& layout, void* dst);

// The layout stated by the header of a buffer of `bytes` bytes at `data`, validated: magic,
// version, attributes and a total size equal to `bytes`. Throws InvalidArgument naming `op` and
// `arg` otherwise.
QuantizedLayout read_quantized_header(std::string_view op, std::string_view arg, const void* data,
                                      std::int64_t bytes);

}  // namespace tileops::ops
