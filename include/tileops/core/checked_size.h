// Checked size arithmetic. Every element count, byte count and extent product in tileops is
// formed with these, so that an overflow is an InvalidArgument naming who asked ("rms_norm:
// argument 'x'") instead of a wrapped value that sizes a buffer too small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tileops/core/data_type.h"

namespace tileops {

class Dims;

// Throws InvalidArgument "<what>: <detail> overflows int64".
[[noreturn]] void throw_size_overflow(std::string_view what, std::string_view detail);

// a * b and a + b, or throw_size_overflow(what, ...).
std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what);
std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what);

// ceil(a / b) for a >= 0 and b > 0, without forming a + b - 1 (which wraps for a near int64's
// maximum, as broadcast extents can be).
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// a rounded up to a multiple of b, for a >= 0 and b > 0 (the caller knows it fits: extents of
// buffers it sizes with checked arithmetic).
constexpr std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

// The product of non-negative extents (1 for none). A zero extent makes the product 0 without
// checking the others: an empty tensor of any shape holds no bytes.
std::int64_t checked_product(std::span<const std::int64_t> extents, std::string_view what);

// count * element_size as a byte count.
std::int64_t checked_bytes(std::int64_t count, std::size_t element_size, std::string_view what);

// The elements a strided view reaches: 1 + sum((shape[i] - 1) * strides[i]), 0 when empty.
// Extents and strides must be non-negative.
std::int64_t checked_span(const Dims& shape, const Dims& strides, std::string_view what);

// Validates a view's geometry once, for the Tensor constructor and the importers (DLPack, numpy,
// torch, the C API), which pass their own `what`: shape and strides of equal length, extents
// and strides non-negative, and numel, numel * element size and the reached span in bytes all
// within int64. Throws InvalidArgument naming `what` otherwise.
void check_view_geometry(const Dims& shape, const Dims& strides, DataType dtype,
                         std::string_view what);

}  // namespace tileops
