#include "tileops/core/checked_size.h"

#include <string>

#include "tileops/core/dims.h"
#include "tileops/core/error.h"

namespace tileops {

void throw_size_overflow(std::string_view what, std::string_view detail) {
  std::string message(what);
  message.append(": ").append(detail).append(" overflows int64");
  throw Error(ErrorKind::kInvalidArgument, message);
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw_size_overflow(what, std::to_string(a) + " * " + std::to_string(b));
  }
  return r;
}

std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw_size_overflow(what, std::to_string(a) + " + " + std::to_string(b));
  }
  return r;
}

std::int64_t checked_product(std::span<const std::int64_t> extents, std::string_view what) {
  for (std::int64_t e : extents) {
    if (e == 0) return 0;
  }
  std::int64_t p = 1;
  for (std::int64_t e : extents) {
    if (__builtin_mul_overflow(p, e, &p)) {
      throw_size_overflow(what, "the product of the extents " + Dims(extents).to_string());
    }
  }
  return p;
}

std::int64_t checked_bytes(std::int64_t count, std::size_t element_size, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(count, element_size, &r)) {
    throw_size_overflow(
        what, std::to_string(count) + " elements of " + std::to_string(element_size) + " bytes");
  }
  return r;
}

std::int64_t checked_span(const Dims& shape, const Dims& strides, std::string_view what) {
  for (std::int64_t e : shape) {
    if (e == 0) return 0;
  }
  std::int64_t last = 0;
  for (int i = 0; i < shape.size(); ++i) {
    std::int64_t reach = 0;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach) ||
        __builtin_add_overflow(last, reach, &last)) {
      throw_size_overflow(
          what, "the span of shape " + shape.to_string() + " with strides " + strides.to_string());
    }
  }
  return checked_add(last, 1, what);
}

void check_view_geometry(const Dims& shape, const Dims& strides, DataType dtype,
                         std::string_view what) {
  if (shape.size() != strides.size()) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + ": shape " + shape.to_string() +
                                                 " and strides " + strides.to_string() +
                                                 " differ in length");
  }
  for (int i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0) {
      throw Error(ErrorKind::kInvalidArgument,
                  std::string(what) + ": negative extent or stride in shape " + shape.to_string() +
                      " strides " + strides.to_string());
    }
  }
  const std::int64_t numel =
      checked_product(std::span<const std::int64_t>(shape.begin(), shape.end()), what);
  checked_bytes(numel, size_of(dtype), what);
  checked_bytes(checked_span(shape, strides, what), size_of(dtype), what);
}

}  // namespace tileops
