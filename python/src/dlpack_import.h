// DLPack -> tileops view, without pybind: the Python importer and the DLPack fuzz target share
// it, so that every check the C API makes is made here too.
#pragma once

#include <dlpack/dlpack.h>

#include <string_view>

#include "tileops/core/tensor.h"

namespace tileops::python {

// The view every importer (torch, numpy, buffer, DLPack) makes of foreign memory, with the
// checks of the C API: extents >= 0 whose product (0 counted as 1) fits in int64; strides >= 0
// where the extent is above 1 (a size-1 dim's stride is ignored, an empty tensor's strides are
// replaced by contiguous ones); numel, bytes and span within int64 (check_view_geometry).
// Errors name "<op>: argument '<arg>'".
Tensor import_view(void* data, Dims shape, Dims strides, DataType dtype, std::string_view op,
                   std::string_view arg);

// A non-owning view of `t` (argument `arg` of operator `op`). Throws tileops::Error:
// kInvalidType for an unsupported dtype; kInvalidArgument for a non-CPU device, a rank outside
// [0, kMaxRank], a NULL shape or data with elements, negative extents or strides (a stride of a
// size-1 dim is ignored), an element count, byte count or span beyond int64, a byte offset
// that moves data out of range, or (when `writable`) `read_only` memory. A legacy DLTensor has
// no read-only flag: the caller passes what it knows.
Tensor tensor_from_dltensor(const DLTensor& t, std::string_view op, std::string_view arg,
                            bool writable, bool read_only = false);

}  // namespace tileops::python
