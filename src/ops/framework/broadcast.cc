#include "src/ops/framework/broadcast.h"

#include <algorithm>
#include <string>

namespace tileops::ops {

std::optional<Dims> broadcast_shapes(const Dims& a, const Dims& b) {
  const int rank = std::max(a.size(), b.size());
  Dims result;
  result.resize(rank);
  for (int i = 1; i <= rank; ++i) {
    const std::int64_t x = i <= a.size() ? a[a.size() - i] : 1;
    const std::int64_t y = i <= b.size() ? b[b.size() - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    result[rank - i] = x == 1 ? y : x;
  }
  return result;
}

Dims broadcast_strides(const Dims& shape, const Dims& strides, const Dims& target) {
  Dims result;
  result.resize(target.size());
  const int lead = target.size() - shape.size();
  for (int i = 0; i < shape.size(); ++i) {
    result[lead + i] = shape[i] == 1 ? 0 : strides[i];
  }
  return result;
}

void check_broadcast_operands(const ArgCheck& check, const Tensor& input,
                              std::string_view input_arg, const Tensor& other,
                              std::string_view other_arg, const Tensor& out,
                              std::string_view out_arg) {
  const std::optional<Dims> shape = broadcast_shapes(input.shape(), other.shape());
  if (!shape) {
    check.fail(
        ErrorKind::kInvalidArgument, other_arg,
        "a shape broadcastable with " + std::string(input_arg) + "'s " + input.shape().to_string(),
        other.shape().to_string());
  }
  check.shape_is(
      out, out_arg, *shape,
      "the broadcast shape of " + std::string(input_arg) + " and " + std::string(other_arg));
}

}  // namespace tileops::ops
