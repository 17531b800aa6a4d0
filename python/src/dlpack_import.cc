#include "python/src/dlpack_import.h"

#include <cstdint>
#include <span>
#include <string>

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops::python {
namespace {

[[noreturn]] void reject(ErrorKind kind, std::string_view op, std::string_view arg,
                         std::string_view expected, std::string_view actual) {
  throw_argument_error(kind, op, arg, expected, actual);
}

std::string what_of(std::string_view op, std::string_view arg) {
  std::string what(op);
  what.append(": argument '").append(arg).append("'");
  return what;
}

// Bounds every contiguous stride of `shape` (extents of 0 count as 1), as the C API does.
void check_extents(const Dims& shape, std::string_view op, std::string_view arg) {
  std::int64_t product = 1;
  for (std::int64_t extent : shape) {
    if (extent < 0) {
      reject(ErrorKind::kInvalidArgument, op, arg, "extents >= 0", "shape " + shape.to_string());
    }
    if (__builtin_mul_overflow(product, extent > 0 ? extent : 1, &product)) {
      reject(ErrorKind::kInvalidArgument, op, arg, "a tensor whose size fits in int64",
             "shape " + shape.to_string());
    }
  }
}

DataType dlpack_dtype(DLDataType type, std::string_view op, std::string_view arg) {
  if (type.lanes == 1) {
    if (type.code == kDLFloat && type.bits == 16) return DataType::kFloat16;
    if (type.code == kDLFloat && type.bits == 32) return DataType::kFloat32;
    if (type.code == kDLFloat && type.bits == 64) return DataType::kFloat64;
    if (type.code == kDLBfloat && type.bits == 16) return DataType::kBFloat16;
    if (type.code == kDLUInt && type.bits == 8) return DataType::kUInt8;
    if (type.code == kDLInt && type.bits == 8) return DataType::kInt8;
    if (type.code == kDLInt && type.bits == 16) return DataType::kInt16;
    if (type.code == kDLInt && type.bits == 32) return DataType::kInt32;
    if (type.code == kDLInt && type.bits == 64) return DataType::kInt64;
  }
  reject(ErrorKind::kInvalidType, op, arg, "a supported DLPack dtype",
         "code " + std::to_string(type.code) + " bits " + std::to_string(type.bits) + " lanes " +
             std::to_string(type.lanes));
}

}  // namespace

Tensor import_view(void* data, Dims shape, Dims strides, DataType dtype, std::string_view op,
                   std::string_view arg) {
  check_extents(shape, op, arg);
  if (strides.size() != shape.size()) {
    reject(ErrorKind::kInvalidArgument, op, arg, "one stride per dim",
           "shape " + shape.to_string() + " strides " + strides.to_string());
  }
  if (shape.product() == 0) {
    strides = contiguous_strides(shape);  // libraries report any strides for an empty tensor
  } else {
    // Inner dims first: a size-1 dim's negative stride (numpy reports one after a flip) is never
    // stepped over; it becomes the packed stride over its inner neighbour.
    for (int i = shape.size() - 1; i >= 0; --i) {
      if (strides[i] >= 0) continue;
      if (shape[i] != 1) {
        reject(ErrorKind::kInvalidArgument, op, arg, "non-negative strides",
               "strides " + strides.to_string() + " (make it contiguous first)");
      }
      strides[i] =
          i + 1 == shape.size() ? 1 : checked_mul(shape[i + 1], strides[i + 1], what_of(op, arg));
    }
  }
  check_view_geometry(shape, strides, dtype, what_of(op, arg));
  if (data == nullptr && shape.product() != 0) {
    reject(ErrorKind::kInvalidArgument, op, arg, "a data pointer for a non-empty tensor", "NULL");
  }
  return Tensor(data, shape, strides, dtype);
}

Tensor tensor_from_dltensor(const DLTensor& t, std::string_view op, std::string_view arg,
                            bool writable, bool read_only) {
  if (t.device.device_type != kDLCPU) {
    reject(ErrorKind::kInvalidArgument, op, arg, "a CPU tensor",
           "DLPack device type " + std::to_string(t.device.device_type));
  }
  if (t.ndim < 0 || t.ndim > kMaxRank) {
    reject(ErrorKind::kInvalidArgument, op, arg, "rank in [0, " + std::to_string(kMaxRank) + "]",
           "rank " + std::to_string(t.ndim));
  }
  if (t.shape == nullptr && t.ndim > 0) {
    reject(ErrorKind::kInvalidArgument, op, arg, "a shape array of ndim extents", "NULL shape");
  }
  if (writable && read_only) {
    reject(ErrorKind::kInvalidArgument, op, arg, "writable memory", "a read-only DLPack tensor");
  }
  const DataType dtype = dlpack_dtype(t.dtype, op, arg);
  const auto rank = static_cast<std::size_t>(t.ndim);
  const Dims shape(std::span<const std::int64_t>(t.shape, t.ndim > 0 ? rank : 0));
  Dims strides;
  if (t.strides == nullptr) {  // legacy DLPack: row-major
    check_extents(shape, op, arg);
    strides = contiguous_strides(shape);
  } else {
    strides = Dims(std::span<const std::int64_t>(t.strides, rank));
  }
  const Tensor view = import_view(t.data, shape, strides, dtype, op, arg);
  if (t.byte_offset == 0 || view.numel() == 0) return view;
  // data + byte_offset + the reached bytes must stay within the address space.
  const std::string what = what_of(op, arg);
  const std::int64_t span =
      checked_bytes(checked_span(view.shape(), view.strides(), what), view.element_size(), what);
  std::uintptr_t end = 0;
  if (__builtin_add_overflow(reinterpret_cast<std::uintptr_t>(t.data), t.byte_offset, &end) ||
      __builtin_add_overflow(end, static_cast<std::uint64_t>(span), &end)) {
    reject(ErrorKind::kInvalidArgument, op, arg, "data + byte_offset within the address space",
           "byte_offset " + std::to_string(t.byte_offset));
  }
  return Tensor(static_cast<char*>(t.data) + t.byte_offset, view.shape(), view.strides(), dtype);
}

}  // namespace tileops::python
