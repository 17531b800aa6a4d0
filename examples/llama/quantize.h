// Weight-only quantization of a loaded decoder (`llama_generate --quantize int8|int4`): the
// projections become ops::quantize_weight buffers (rank-1 uint8) in place of their [N, K]
// tensors, and Model runs them with ops::linear_quantized.
#pragma once

#include <cstdint>

#include "examples/llama/weights.h"

namespace tileops::llama {

struct WeightQuantization {
  int bits = 0;         // 0: none; 8: int8; 4: int4 (symmetric)
  int group_size = -1;  // -1: the default of `bits` (int8: 0 = per channel; int4: 32)

  int group() const { return group_size >= 0 ? group_size : (bits == 4 ? 32 : 0); }
};

// A weight slot holding a quantize_weight buffer rather than an [N, K] tensor.
inline bool is_quantized(const Tensor& weight) {
  return weight.dtype() == DataType::kUInt8 && weight.rank() == 1;
}

// Bytes of every tensor of `weights` (quantized buffers at their size).
std::int64_t weight_bytes(const Weights& weights);

// Quantizes q/k/v, o_proj, gate/up and down of every layer with `q` (int4: symmetric), each
// replaced as it is done so that at most one float copy is extra. The lm_head, the most
// sensitive matrix (llama.cpp's 4-bit types keep it at 6 bits or more), becomes int8 per
// channel in both modes; tied to the embedding, it gets its own int8 copy while the embedding
// keeps its rows in the model dtype (a lookup reads a few rows per token, not the table). Norms
// and biases stay as they are. An error names the option and the matrix. bits 0: nothing.
void quantize_weights(Weights& weights, const WeightQuantization& q);

}  // namespace tileops::llama
