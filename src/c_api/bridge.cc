#include "src/c_api/bridge.h"

#include <algorithm>
#include <span>
#include <string>

#include "tileops/core/checked_size.h"
#include "tileops/core/data_type.h"
#include "tileops/runtime/cpu_info.h"

namespace tileops::c_api {
namespace {

// The C enum mirrors DataType's order, so a dtype crosses as its integer value.
#define TILEOPS_SAME_DTYPE(c_name, cpp_name) \
  static_assert(static_cast<int>(DataType::cpp_name) == (c_name), #c_name)
TILEOPS_SAME_DTYPE(TILEOPS_BOOL, kBool);
TILEOPS_SAME_DTYPE(TILEOPS_INT8, kInt8);
TILEOPS_SAME_DTYPE(TILEOPS_INT16, kInt16);
TILEOPS_SAME_DTYPE(TILEOPS_INT32, kInt32);
TILEOPS_SAME_DTYPE(TILEOPS_INT64, kInt64);
TILEOPS_SAME_DTYPE(TILEOPS_UINT8, kUInt8);
TILEOPS_SAME_DTYPE(TILEOPS_FLOAT16, kFloat16);
TILEOPS_SAME_DTYPE(TILEOPS_BFLOAT16, kBFloat16);
TILEOPS_SAME_DTYPE(TILEOPS_FLOAT32, kFloat32);
TILEOPS_SAME_DTYPE(TILEOPS_FLOAT64, kFloat64);
TILEOPS_SAME_DTYPE(TILEOPS_FLOAT8_E4M3FN, kFloat8E4M3FN);
TILEOPS_SAME_DTYPE(TILEOPS_FLOAT8_E5M2, kFloat8E5M2);
TILEOPS_SAME_DTYPE(TILEOPS_HIFLOAT8, kHiFloat8);
#undef TILEOPS_SAME_DTYPE
static_assert(TILEOPS_HIFLOAT8 + 1 == kNumDataTypes, "a DataType is missing from the C API");
static_assert(TILEOPS_MAX_RANK == kMaxRank);

thread_local std::string tl_message;
// Points into tl_message, or at a literal when recording the message itself failed.
thread_local const char* tl_last_error = "";

[[noreturn]] void reject(std::string_view op, std::string_view arg, std::string_view expected,
                         std::string_view actual) {
  throw_argument_error(ErrorKind::kInvalidArgument, op, arg, expected, actual);
}

}  // namespace

DataType to_dtype(std::string_view op, std::string_view arg, std::int32_t dtype) {
  if (dtype < 0 || dtype >= kNumDataTypes) {
    reject(op, arg, "a tileops_dtype in [0, " + std::to_string(kNumDataTypes) + ")",
           "dtype " + std::to_string(dtype));
  }
  return static_cast<DataType>(dtype);
}

Tensor to_tensor(std::string_view op, std::string_view arg, const tileops_tensor* t) {
  if (t == nullptr) reject(op, arg, "a tensor", "NULL");
  if (t->ndim < 0 || t->ndim > kMaxRank) {
    reject(op, arg, "ndim in [0, " + std::to_string(kMaxRank) + "]", std::to_string(t->ndim));
  }
  if (t->shape == nullptr && t->ndim > 0) {
    reject(op, arg, "a shape array of ndim extents", "NULL shape");
  }
  const DataType dtype = to_dtype(op, arg, t->dtype);
  if (t->device_type != TILEOPS_DEVICE_CPU && t->device_type != TILEOPS_DEVICE_CUDA) {
    reject(op, arg, "device_type TILEOPS_DEVICE_CPU (0) or TILEOPS_DEVICE_CUDA (1)",
           std::to_string(t->device_type));
  }
  if (t->device_index < 0) {
    reject(op, arg, "device_index >= 0", std::to_string(t->device_index));
  }
  const auto rank = static_cast<std::size_t>(t->ndim);
  const Dims shape(std::span<const std::int64_t>(t->shape, t->ndim > 0 ? rank : 0));
  for (std::int64_t extent : shape) {
    if (extent < 0) reject(op, arg, "extents >= 0", "shape " + shape.to_string());
  }
  // Sizes beyond int64 are garbage (no allocation comes near) that would overflow index
  // arithmetic: the Tensor's one geometry check refuses them, here named by operator and argument.
  const std::string what = std::string(op) + ": argument '" + std::string(arg) + "'";
  Dims strides;
  if (t->strides == nullptr) {
    // Contiguous strides are products of the extents (0 counting as 1).
    Dims bounded = shape;
    for (std::int64_t& extent : bounded) extent = std::max<std::int64_t>(extent, 1);
    checked_product(std::span<const std::int64_t>(bounded.begin(), bounded.end()), what);
    strides = contiguous_strides(shape);
  } else {
    strides = Dims(std::span<const std::int64_t>(t->strides, rank));
  }
  for (std::int64_t stride : strides) {
    if (stride < 0) reject(op, arg, "strides >= 0", "strides " + strides.to_string());
  }
  check_view_geometry(shape, strides, dtype, what);
  const Device device{t->device_type == TILEOPS_DEVICE_CPU ? DeviceType::kCpu : DeviceType::kCuda,
                      t->device_index};
  return Tensor(t->data, shape, strides, dtype, device);
}

Context to_context(const tileops_context* ctx) {
  Context context;
  if (ctx != nullptr) {
    context.stream = ctx->stream;
    context.implementation_index = ctx->implementation_index;
  }
  return context;
}

tileops_status fail(tileops_status status, const char* message) noexcept {
  try {
    tl_message = message;
    tl_last_error = tl_message.c_str();
  } catch (...) {
    tl_last_error = "out of memory while recording an error message";
  }
  return status;
}

tileops_status status_of(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return TILEOPS_INVALID_ARGUMENT;
    case ErrorKind::kInvalidType:
      return TILEOPS_INVALID_TYPE;
    case ErrorKind::kUnsupported:
      return TILEOPS_UNSUPPORTED;
    case ErrorKind::kOutOfMemory:
      return TILEOPS_OUT_OF_MEMORY;
    case ErrorKind::kCompileError:
      return TILEOPS_COMPILE_ERROR;
    case ErrorKind::kInternal:
      return TILEOPS_INTERNAL_ERROR;
  }
  return TILEOPS_INTERNAL_ERROR;
}

}  // namespace tileops::c_api

extern "C" const char* tileops_last_error(void) { return tileops::c_api::tl_last_error; }

extern "C" const char* tileops_version(void) { return tileops::version(); }
