// workspace_bytes: an operator's scratch size from its extents, in checked arithmetic. Broadcast
// inputs (stride 0) reach extents as large as int64 allows with no memory behind them, so a
// scratch size formed from them can exceed int64; wrapped, it would under-allocate the scratch
// that the kernel then fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace tileops::ops {

// The bytes of the sum, over `terms`, of the product of each term's factors, in elements of
// `element_size` bytes. Throws InvalidArgument "<what>: ... overflows int64" when that sum or its
// bytes exceed int64; `what` names the operator and argument ("rms_norm: argument 'input'").
std::size_t workspace_bytes(std::initializer_list<std::initializer_list<std::int64_t>> terms,
                            std::size_t element_size, std::string_view what);

}  // namespace tileops::ops
