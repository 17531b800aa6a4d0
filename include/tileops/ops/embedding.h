// embedding: out[i..., :] = weight[input_ids[i...], :].
#pragma once

#include "tileops/core/tensor.h"
#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// input_ids: int32/int64, any shape; weight: [num_embeddings, D] of any dtype; out:
// [*input_ids.shape, D] of weight's dtype. An id outside [0, num_embeddings) is an error raised
// before anything is written.
void embedding(const Tensor& input_ids, const Tensor& weight, const Tensor& out,
               const Context& ctx = {});

// Class form: validated and specialised once for a geometry, then called on new data.
class Embedding {
 public:
  Embedding(const Tensor& input_ids, const Tensor& weight, const Tensor& out,
            int implementation_index = 0);
  void operator()(const Tensor& input_ids, const Tensor& weight, const Tensor& out,
                  const Context& ctx = {}) const;

 private:
  PreparedOperator prepared_;
};

}  // namespace tileops::ops
