// The 13 x 13 row converters and the 13 lookup rows, instantiated from cast_element.h, and
// the bit-exact copy row.
#include "src/ops/cpu/cast_rows.h"

#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "src/ops/cpu/cast_element.h"
#include "tileops/core/error.h"

namespace tileops::ops::cpu {
namespace {

template <DataType From, DataType To>
void convert_row(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                 std::int64_t n) {
  using S = cast_element::Elem<From>;
  using D = cast_element::Elem<To>;
  const auto* s = static_cast<const typename S::Storage*>(src);
  auto* d = static_cast<typename D::Storage*>(dst);
  if (src_stride == 1 && dst_stride == 1) {  // separate loop so the compiler can vectorise it
    for (std::int64_t i = 0; i < n; ++i) d[i] = D::from(S::value(s[i]));
  } else {
    for (std::int64_t i = 0; i < n; ++i) d[i * dst_stride] = D::from(S::value(s[i * src_stride]));
  }
}

constexpr int kPairs = kNumDataTypes * kNumDataTypes;

// Entry from * kNumDataTypes + to, in DataType order.
constexpr auto kRowFunctions = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<CastRowFn, kPairs>{&convert_row<static_cast<DataType>(I / kNumDataTypes),
                                                    static_cast<DataType>(I % kNumDataTypes)>...};
}
(std::make_index_sequence<kPairs>{});

template <typename T>
void copy_typed(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
                std::int64_t n) {
  const auto* s = static_cast<const T*>(src);
  auto* d = static_cast<T*>(dst);
  for (std::int64_t i = 0; i < n; ++i) d[i * dst_stride] = s[i * src_stride];
}

template <DataType To>
void lookup_row(const std::uint8_t* src, std::int64_t src_stride, void* dst,
                std::int64_t dst_stride, std::int64_t n, const void* table) {
  using T = typename cast_element::Elem<To>::Storage;
  const auto* t = static_cast<const T*>(table);
  auto* d = static_cast<T*>(dst);
  if (src_stride == 1 && dst_stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) d[i] = t[src[i]];
  } else {
    for (std::int64_t i = 0; i < n; ++i) d[i * dst_stride] = t[src[i * src_stride]];
  }
}

constexpr auto kLookupFunctions = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<LookupRowFn, kNumDataTypes>{&lookup_row<static_cast<DataType>(I)>...};
}
(std::make_index_sequence<kNumDataTypes>{});

}  // namespace

CastRowFn cast_row_function(DataType from, DataType to) {
  return kRowFunctions[static_cast<int>(from) * kNumDataTypes + static_cast<int>(to)];
}

void copy_row(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
              std::int64_t n, std::size_t element_size) {
  if (src_stride == 1 && dst_stride == 1) {
    if (src != dst) std::memcpy(dst, src, static_cast<std::size_t>(n) * element_size);
    return;
  }
  switch (element_size) {
    case 1:
      return copy_typed<std::uint8_t>(src, src_stride, dst, dst_stride, n);
    case 2:
      return copy_typed<std::uint16_t>(src, src_stride, dst, dst_stride, n);
    case 4:
      return copy_typed<std::uint32_t>(src, src_stride, dst, dst_stride, n);
    case 8:
      return copy_typed<std::uint64_t>(src, src_stride, dst, dst_stride, n);
    default:
      throw_internal_error("cast copy_row", "unexpected element size");
  }
}

LookupRowFn lookup_row_function(DataType to) { return kLookupFunctions[static_cast<int>(to)]; }

const std::uint8_t* wide_lookup_table(DataType from, DataType to) {
  static std::mutex mutex;
  static std::map<std::pair<DataType, DataType>, std::unique_ptr<std::uint8_t[]>> tables;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& table = tables[{from, to}];
  if (!table) {
    std::vector<std::uint16_t> patterns(65536);
    for (std::uint32_t p = 0; p < 65536; ++p) patterns[p] = static_cast<std::uint16_t>(p);
    table = std::make_unique<std::uint8_t[]>(65536);
    cast_row_function(from, to)(patterns.data(), 1, table.get(), 1, 65536);
  }
  return table.get();
}

void wide_lookup_row(const std::uint16_t* src, std::int64_t src_stride, std::uint8_t* dst,
                     std::int64_t dst_stride, std::int64_t n, const std::uint8_t* table) {
  if (src_stride == 1 && dst_stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i * dst_stride] = table[src[i * src_stride]];
  }
}

}  // namespace tileops::ops::cpu
