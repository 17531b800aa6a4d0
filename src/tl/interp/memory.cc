// Interpreter: global memory. Loads read only in-bounds elements (the rest are the pad value);
// stores and atomics write only in-bounds, unmasked elements.
#include <algorithm>

#include "src/tl/interp/eval.h"
#include "tileops/core/scalar.h"

namespace tileops::tl::interp {
namespace {

// Calls fn(lane, address) for every lane of a tile of `shape` at `offsets` that lies inside `t`.
template <typename Fn>
void for_each_in_bounds(const TensorView& t, const std::vector<std::int64_t>& shape,
                        const std::vector<std::int64_t>& offsets, Fn&& fn) {
  const std::size_t rank = t.shape.size();
  std::size_t n = 1;
  for (std::int64_t e : shape) n *= static_cast<std::size_t>(e);
  if (shape.empty()) {  // a scalar: one element at `offsets`
    for (std::size_t d = 0; d < rank; ++d) {
      if (offsets[d] < 0 || offsets[d] >= t.shape[d]) return;
    }
    std::int64_t element = 0;
    for (std::size_t d = 0; d < rank; ++d) element += offsets[d] * t.strides[d];
    fn(std::size_t{0}, t.base + element * static_cast<std::int64_t>(size_of(t.dtype)));
    return;
  }
  const std::int64_t esize = static_cast<std::int64_t>(size_of(t.dtype));
  std::vector<std::int64_t> index(rank, 0);
  for (std::size_t lane = 0; lane < n; ++lane) {
    // offsets[d] + index[d] in [0, extent), compared without forming the sum (it may overflow);
    // the address of an element inside is exact (tensor_geometry_ok).
    bool inside = true;
    for (std::size_t d = 0; d < rank && inside; ++d) {
      inside = offsets[d] >= -index[d] && offsets[d] < t.shape[d] - index[d];
    }
    if (inside) {
      std::int64_t element = 0;
      for (std::size_t d = 0; d < rank; ++d) element += (offsets[d] + index[d]) * t.strides[d];
      fn(lane, t.base + element * esize);
    }
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

void eval_load(const TensorView& t, const std::vector<std::int64_t>& offsets, const Buffer& pad,
               Buffer& out) {
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out.floating()) {
      out.f[k] = pad.f[0];
    } else {
      out.i[k] = pad.i[0];
    }
  }
  for_each_in_bounds(t, out.shape, offsets, [&](std::size_t lane, const char* address) {
    if (out.floating()) {
      out.f[lane] = read_as_double(address, t.dtype);
    } else {
      out.i[lane] = read_as_int64(address, t.dtype);
    }
  });
}

void eval_store(const Buffer& value, const TensorView& t, const std::vector<std::int64_t>& offsets,
                std::int64_t mask, const Op& op, std::mutex* atomic_mutex) {
  const bool atomic = op.kind == OpKind::kAtomic;
  const AtomicOp kind = atomic ? op.as<AtomicAttrs>().op : AtomicOp::kAdd;  // kAdd: unused
  for_each_in_bounds(t, value.shape, offsets, [&](std::size_t lane, char* address) {
    if (mask >= 0 && static_cast<std::int64_t>(lane) >= mask) return;
    if (!atomic) {
      if (value.floating()) {
        write_from_double(value.f[lane], address, t.dtype);
      } else {
        write_from_int64(value.i[lane], address, t.dtype);
      }
      return;
    }
    const std::lock_guard<std::mutex> lock(*atomic_mutex);
    Buffer cell;
    cell.resize(t.dtype, {});
    if (value.floating()) {
      const double old = read_as_double(address, t.dtype);
      const double v = value.f[lane];
      cell.set(0, kind == AtomicOp::kAdd
                      ? old + v
                      : (kind == AtomicOp::kMax ? std::max(old, v) : std::min(old, v)));
      write_from_double(cell.f[0], address, t.dtype);
    } else {
      const std::int64_t old = read_as_int64(address, t.dtype);
      const std::int64_t v = value.i[lane];
      cell.set_int(0, kind == AtomicOp::kAdd
                          ? static_cast<std::int64_t>(static_cast<std::uint64_t>(old) +
                                                      static_cast<std::uint64_t>(v))
                          : (kind == AtomicOp::kMax ? std::max(old, v) : std::min(old, v)));
      write_from_int64(cell.i[0], address, t.dtype);
    }
  });
}

}  // namespace tileops::tl::interp
