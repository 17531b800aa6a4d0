// Row converters of the cast kernel. A row is n elements at a fixed stride (in elements) in the
// source and in the destination; every function is picked once per operator instance, so the
// inner loops carry no per-element dispatch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tileops/core/data_type.h"

namespace tileops::ops::cpu {

// dst[i * dst_stride] = convert(src[i * src_stride]) for i in [0, n), with the semantics of
// tileops::ops::cast for the pair (from, to).
using CastRowFn = void (*)(const void* src, std::int64_t src_stride, void* dst,
                           std::int64_t dst_stride, std::int64_t n);
CastRowFn cast_row_function(DataType from, DataType to);

// Bit-exact copy of n elements of element_size (1, 2, 4 or 8) bytes.
void copy_row(const void* src, std::int64_t src_stride, void* dst, std::int64_t dst_stride,
              std::int64_t n, std::size_t element_size);

// dst[i * dst_stride] = table[src[i * src_stride]] for one-byte sources, where the table holds
// the 256 converted values as `to` elements (written by a CastRowFn over the 256 patterns).
using LookupRowFn = void (*)(const std::uint8_t* src, std::int64_t src_stride, void* dst,
                             std::int64_t dst_stride, std::int64_t n, const void* table);
LookupRowFn lookup_row_function(DataType to);

// Two-byte sources to one-byte targets (e.g. bfloat16 -> float8): the 65536 converted bytes,
// built on first use and kept for the process (at most 64 KiB per pair).
const std::uint8_t* wide_lookup_table(DataType from, DataType to);

// dst[i * dst_stride] = table[src[i * src_stride]] with a 65536-entry byte table.
void wide_lookup_row(const std::uint16_t* src, std::int64_t src_stride, std::uint8_t* dst,
                     std::int64_t dst_stride, std::int64_t n, const std::uint8_t* table);

}  // namespace tileops::ops::cpu
