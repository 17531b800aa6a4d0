#include "src/ops/framework/workspace_bytes.h"

#include <span>

#include "tileops/core/checked_size.h"

namespace tileops::ops {

std::size_t workspace_bytes(std::initializer_list<std::initializer_list<std::int64_t>> terms,
                            std::size_t element_size, std::string_view what) {
  std::int64_t count = 0;
  for (const auto& term : terms) {
    const std::int64_t product =
        checked_product(std::span<const std::int64_t>(term.begin(), term.size()), what);
    count = checked_add(count, product, what);
  }
  return static_cast<std::size_t>(checked_bytes(count, element_size, what));
}

}  // namespace tileops::ops
