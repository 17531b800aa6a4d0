// The row loop shared by scaled_softmax and causal_softmax: each row of the last dim is
// softmax(scale · x) over its first visible(r) entries, followed by zeros over the rest.
#pragma once

#include <cstdint>

#include "tileops/core/tensor.h"
#include "tileops/runtime/context.h"
#include "tileops/runtime/function_ref.h"

namespace tileops::ops::cpu {

enum class RowOrder {
  kSequential,  // rows in memory order, so the next row can be prefetched
  kZigZag,      // first, last, second, second-to-last, ...: equal work per chunk when row r's
                // cost grows with r (causal masks)
};

// input, out: same shape, float dtypes (validated by the contracts). visible(r) in [1, width]
// for row r numbered row-major over the leading dims. Rows are split over the thread pool; each
// is read once from memory (into float32 scratch unless the kernels can convert on the fly).
void run_softmax_rows(const Tensor& input, const Tensor& out, float scale,
                      FunctionRef<std::int64_t(std::int64_t)> visible, RowOrder order,
                      const Context& ctx);

}  // namespace tileops::ops::cpu
