// Per-op evaluation functions of the interpreter, one group per file. Each writes `out`, which
// the caller has sized for the op's result type.
#pragma once

#include <mutex>
#include <vector>

#include "src/tl/interp/buffer.h"

namespace tileops::tl::interp {

// For every element of `out_shape`, the row-major index of the element of `shape` that NumPy
// broadcasting reads.
std::vector<std::size_t> broadcast_map(const std::vector<std::int64_t>& shape,
                                       const std::vector<std::int64_t>& out_shape);

void eval_unary(UnaryOp op, const Buffer& x, Buffer& out);
void eval_binary(BinaryOp op, const Buffer& a, const Buffer& b, Buffer& out);
void eval_where(const Buffer& cond, const Buffer& a, const Buffer& b, Buffer& out);

void eval_load(const TensorView& t, const std::vector<std::int64_t>& offsets, const Buffer& pad,
               Buffer& out);
// Writes the in-bounds elements whose row-major lane is below `mask` (-1: all). Atomics hold
// `atomic_mutex` for their read-modify-write.
void eval_store(const Buffer& value, const TensorView& t, const std::vector<std::int64_t>& offsets,
                std::int64_t mask, const Op& op, std::mutex* atomic_mutex);

void eval_reduce(ReduceOp op, const Buffer& x, const std::vector<std::int64_t>& dims, Buffer& out);
void eval_cumsum(const Buffer& x, int axis, Buffer& out);
void eval_sort(const Buffer& x, const SortAttrs& sort, Buffer& out);
void eval_broadcast(const Buffer& x, Buffer& out);
void eval_transpose(const Buffer& x, const std::vector<std::int64_t>& perm, Buffer& out);
void eval_slice(const Buffer& x, const std::vector<std::int64_t>& offsets, Buffer& out);
void eval_concat(const std::vector<const Buffer*>& xs, int axis, Buffer& out);
void eval_matmul(const Buffer& a, const Buffer& b, const Buffer* c, bool acc, Buffer& out);

}  // namespace tileops::tl::interp
