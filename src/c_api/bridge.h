// Bridge from the C API to the C++ one: C tensor descriptors and contexts become validated
// tileops::Tensor views and Contexts, and every exception becomes a status plus the
// thread-local message that tileops_last_error() returns.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <string_view>

#include "tileops/c/tileops.h"
#include "tileops/core/error.h"
#include "tileops/core/tensor.h"
#include "tileops/runtime/context.h"

namespace tileops::c_api {

// Validates a descriptor and returns its view; throws Error (kInvalidArgument) naming `op` and
// `arg` for NULL, an unknown dtype or device, a bad ndim, NULL shape, negative extents or
// strides, or a size that overflows.
Tensor to_tensor(std::string_view op, std::string_view arg, const tileops_tensor* tensor);
// As to_tensor, but NULL is an omitted optional argument: an undefined Tensor.
inline Tensor optional_tensor(std::string_view op, std::string_view arg,
                              const tileops_tensor* tensor) {
  return tensor == nullptr ? Tensor() : to_tensor(op, arg, tensor);
}
// A tileops_dtype value as a DataType; throws Error (kInvalidArgument) naming `op` and `arg`
// when it is none.
DataType to_dtype(std::string_view op, std::string_view arg, std::int32_t dtype);
// NULL = the defaults.
Context to_context(const tileops_context* ctx);

// Records `message` as this thread's last error and returns `status`.
tileops_status fail(tileops_status status, const char* message) noexcept;
tileops_status status_of(ErrorKind kind) noexcept;

// Runs `call`, turning every exception into a status and a recorded message.
template <typename Call>
tileops_status guarded(Call&& call) noexcept {
  try {
    call();
    return TILEOPS_OK;
  } catch (const Error& e) {
    return fail(status_of(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(TILEOPS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(TILEOPS_INTERNAL_ERROR, e.what());
  } catch (...) {
    return fail(TILEOPS_INTERNAL_ERROR, "an unknown exception escaped a tileops operator");
  }
}

}  // namespace tileops::c_api
