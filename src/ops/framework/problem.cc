#include "tileops/ops/problem.h"

#include <bit>
#include <cstdint>

namespace tileops::ops {
namespace {

inline void mix(std::size_t& h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
}

}  // namespace

TensorDesc TensorDesc::of(const Tensor& tensor) {
  return {true, tensor.dtype(), tensor.device(), tensor.shape(), tensor.strides()};
}

bool TensorDesc::matches(const Tensor& tensor) const {
  if (!present) return tensor.data() == nullptr && tensor.rank() == 0;
  return dtype == tensor.dtype() && device == tensor.device() && shape == tensor.shape() &&
         strides == tensor.strides();
}

std::string TensorDesc::describe() const {
  if (!present) return "(none)";
  return Tensor(nullptr, shape, strides, dtype, device).describe();
}

Device Problem::device() const {
  for (const TensorDesc& t : tensors) {
    if (t.present) return t.device;
  }
  return kCpu;
}

std::size_t Problem::hash() const {
  std::size_t h = std::hash<std::string_view>{}(op);
  for (const TensorDesc& t : tensors) {
    mix(h, t.present);
    mix(h, static_cast<std::uint64_t>(t.dtype));
    mix(h, static_cast<std::uint64_t>(t.device.type) * 1000 + t.device.index);
    for (std::int64_t v : t.shape) mix(h, static_cast<std::uint64_t>(v));
    for (std::int64_t v : t.strides) mix(h, static_cast<std::uint64_t>(v) * 31);
  }
  for (double a : attributes) mix(h, std::bit_cast<std::uint64_t>(a));
  return h;
}

}  // namespace tileops::ops
