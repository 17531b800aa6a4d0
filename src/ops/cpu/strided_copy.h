// Byte copies of runs of elements of any dtype, used by the data-movement operators (cat,
// embedding). Contiguous runs are one memcpy; strided runs copy whole elements with a typed
// load/store per element size, so no dtype has to be known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tileops::ops::cpu {

namespace detail {

// A fixed-size memcpy compiles to one load and one store and, unlike a typed pointer, does not
// assume the element address is aligned (C API callers may hand us any address).
template <std::size_t kBytes>
inline void copy_strided(const char* src, std::int64_t src_stride, char* dst,
                         std::int64_t dst_stride, std::int64_t n) {
  constexpr auto bytes = static_cast<std::int64_t>(kBytes);
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * dst_stride * bytes, src + i * src_stride * bytes, kBytes);
  }
}

}  // namespace detail

// dst[i * dst_stride] = src[i * src_stride] for i in [0, n); strides in elements of
// `element_size` bytes (a stride of 0 in src repeats src[0]). src and dst must not overlap.
inline void copy_elements(const void* src, std::int64_t src_stride, void* dst,
                          std::int64_t dst_stride, std::int64_t n, std::size_t element_size) {
  if (n <= 0) return;
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  if (src_stride == 1 && dst_stride == 1) {
    std::memcpy(d, s, static_cast<std::size_t>(n) * element_size);
    return;
  }
  switch (element_size) {
    case 1:
      detail::copy_strided<1>(s, src_stride, d, dst_stride, n);
      return;
    case 2:
      detail::copy_strided<2>(s, src_stride, d, dst_stride, n);
      return;
    case 4:
      detail::copy_strided<4>(s, src_stride, d, dst_stride, n);
      return;
    case 8:
      detail::copy_strided<8>(s, src_stride, d, dst_stride, n);
      return;
    default:
      for (std::int64_t i = 0; i < n; ++i) {
        std::memcpy(d + i * dst_stride * static_cast<std::int64_t>(element_size),
                    s + i * src_stride * static_cast<std::int64_t>(element_size), element_size);
      }
  }
}

}  // namespace tileops::ops::cpu
