#include "src/ops/contracts/quantized_format.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops::ops {
namespace {

// The header as stored (host byte order; the format is not an interchange format).
struct Header {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint8_t bits;
  std::uint8_t symmetric;
  std::int32_t group_size;
  std::int32_t reserved0;
  std::int64_t n, k, total_bytes;
  std::int64_t reserved[3];
};
static_assert(sizeof(Header) == kQuantizedHeaderBytes);

bool allowed_group(std::int64_t g) { return g == 32 || g == 64 || g == 128; }

}  // namespace

QuantizedLayout quantized_layout(std::string_view op, std::int64_t n, std::int64_t k, int bits,
                                 std::int64_t group_size, bool symmetric) {
  const auto fail = [&](std::string_view arg, std::string_view expected,
                        const std::string& actual) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, arg, expected, actual);
  };
  if (bits != 8 && bits != 4) fail("bits", "8 or 4", std::to_string(bits));
  if (bits == 8 && group_size != 0 && !allowed_group(group_size)) {
    fail("group_size", "0 (per channel), 32, 64 or 128 for bits = 8", std::to_string(group_size));
  }
  if (bits == 4 && !allowed_group(group_size)) {
    fail("group_size", "32, 64 or 128 for bits = 4", std::to_string(group_size));
  }
  if (bits == 8 && !symmetric) fail("symmetric", "true for bits = 8 (int8 is symmetric)", "false");
  if (n < 1 || k < 1)
    fail("weight", "a non-empty [N, K] weight",
         "[" + std::to_string(n) + ", " + std::to_string(k) + "]");
  // Groups never straddle rows: a partial last group would need a second code path for a case
  // no checkpoint has (K is a multiple of 128 in every model we know).
  if (group_size != 0 && k % group_size != 0) {
    fail("weight", "K a multiple of group_size (" + std::to_string(group_size) + ")",
         "K = " + std::to_string(k));
  }
  const std::string what = std::string(op) + ": argument 'weight': its quantized size";
  QuantizedLayout l;
  l.n = n, l.k = k, l.bits = bits, l.group_size = static_cast<int>(group_size);
  l.symmetric = symmetric;
  l.k_padded = group_size != 0
                   ? k
                   : checked_mul(k / kQuantizedKAlign + (k % kQuantizedKAlign != 0 ? 1 : 0),
                                 kQuantizedKAlign, what);
  l.group = group_size != 0 ? group_size : l.k_padded;
  l.groups_per_row = l.k_padded / l.group;
  l.tiles = n / kQuantizedTileRows + (n % kQuantizedTileRows != 0 ? 1 : 0);
  l.meta_bytes = kQuantizedTileRows * 4 * (symmetric ? 1 : 2);
  l.row_code_bytes = checked_mul(l.group, bits, what) / 8;
  l.run_bytes = std::min(kQuantizedRunBytes, l.row_code_bytes);
  l.block_bytes =
      checked_add(l.meta_bytes, checked_mul(kQuantizedTileRows, l.row_code_bytes, what), what);
  l.total_bytes = checked_add(
      kQuantizedHeaderBytes,
      checked_mul(checked_mul(l.tiles, l.groups_per_row, what), l.block_bytes, what), what);
  return l;
}

void write_quantized_header(const QuantizedLayout& layout, void* dst) {
  Header h{};
  h.magic = kQuantizedMagic;
  h.version = kQuantizedVersion;
  h.bits = static_cast<std::uint8_t>(layout.bits);
  h.symmetric = layout.symmetric ? 1 : 0;
  h.group_size = layout.group_size;
  h.n = layout.n, h.k = layout.k, h.total_bytes = layout.total_bytes;
  std::memcpy(dst, &h, sizeof(h));
}

QuantizedLayout read_quantized_header(std::string_view op, std::string_view arg, const void* data,
                                      std::int64_t bytes) {
  const auto fail = [&](std::string_view expected, const std::string& actual) {
    throw_argument_error(ErrorKind::kInvalidArgument, op, arg, expected, actual);
  };
  if (bytes < kQuantizedHeaderBytes || data == nullptr) {
    fail("quantize_weight's output (a 64-byte header, then the weight)",
         std::to_string(bytes) + " bytes");
  }
  Header h;
  std::memcpy(&h, data, sizeof(h));
  if (h.magic != kQuantizedMagic || h.version != kQuantizedVersion) {
    fail("quantize_weight's output (format TOQW version " + std::to_string(kQuantizedVersion) +
             "; quantize again what an older tileops wrote)",
         h.magic != kQuantizedMagic ? std::string("another header")
                                    : "version " + std::to_string(h.version));
  }
  if (h.symmetric > 1 || h.reserved0 != 0 || h.reserved[0] != 0 || h.reserved[1] != 0 ||
      h.reserved[2] != 0) {
    fail("quantize_weight's output (a valid header)", "a corrupt header");
  }
  // quantized_layout names the header's field as the argument that fails.
  QuantizedLayout l;
  try {
    l = quantized_layout(op, h.n, h.k, h.bits, h.group_size, h.symmetric != 0);
  } catch (const Error& e) {
    fail("quantize_weight's output (a valid header)",
         std::string("a header that fails: ") + e.what());
  }
  if (l.total_bytes != h.total_bytes || l.total_bytes != bytes) {
    fail("quantize_weight's output of " + std::to_string(l.total_bytes) + " bytes (its header's [" +
             std::to_string(l.n) + ", " + std::to_string(l.k) + "] weight)",
         std::to_string(bytes) + " bytes, header says " + std::to_string(h.total_bytes));
  }
  return l;
}

}  // namespace tileops::ops
