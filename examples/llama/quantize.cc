#include "examples/llama/quantize.h"

#include <string>

#include "tileops/core/error.h"
#include "tileops/ops/quantized_linear.h"

namespace tileops::llama {
namespace {

// The quantized buffer of one [N, K] weight; quantize_weight's error gains the matrix's name
// (its own names only the operator's argument).
TensorStorage quantized(const Tensor& weight, int bits, int group_size, const std::string& name) {
  try {
    TensorStorage q({ops::quantized_weight_bytes(weight.size(0), weight.size(1), bits, group_size,
                                                 /*symmetric=*/true)},
                    DataType::kUInt8);
    ops::quantize_weight(weight, bits, group_size, /*symmetric=*/true, q);
    return q;
  } catch (const Error& e) {
    throw Error(e.kind(), "llama --quantize int" + std::to_string(bits) + " (group " +
                              std::to_string(group_size) + "): " + name + ": " + e.what());
  }
}

}  // namespace

std::int64_t weight_bytes(const Weights& w) {
  std::size_t total = w.embed.bytes() + w.final_norm.bytes() + w.lm_head.bytes();
  for (const LayerWeights& l : w.layers) {
    total += l.input_norm.bytes() + l.qkv.bytes() + l.qkv_bias.bytes() + l.o_proj.bytes() +
             l.post_norm.bytes() + l.gate_up.bytes() + l.down.bytes();
  }
  return static_cast<std::int64_t>(total);
}

void quantize_weights(Weights& weights, const WeightQuantization& q) {
  if (q.bits == 0) return;
  if (q.bits != 8 && q.bits != 4) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama", "--quantize", "int8 or int4",
                         "int" + std::to_string(q.bits));
  }
  const int group = q.group();
  const auto replace = [&](TensorStorage& w, int bits, int group_size, const std::string& name) {
    if (is_quantized(w)) return;  // a checkpoint's own quantization is kept
    w = quantized(w, bits, group_size, name);
  };
  for (std::size_t l = 0; l < weights.layers.size(); ++l) {
    LayerWeights& lw = weights.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    replace(lw.qkv, q.bits, group, p + "q/k/v");
    replace(lw.o_proj, q.bits, group, p + "o_proj");
    replace(lw.gate_up, q.bits, group, p + "gate/up");
    replace(lw.down, q.bits, group, p + "down");
  }
  if (weights.lm_head.view().defined()) {
    replace(weights.lm_head, 8, 0, "lm_head");
  } else {
    weights.lm_head = quantized(weights.embed, 8, 0, "lm_head (tied to the embedding)");
  }
}

}  // namespace tileops::llama
