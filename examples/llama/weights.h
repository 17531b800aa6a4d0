// The weights of a Llama-architecture decoder in the layout the operators want: q/k/v fused
// into one [q+2kv, hidden] matrix and gate/up into one [2·intermediate, hidden] matrix, so each
// layer runs two linear calls where the checkpoint has five.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "examples/llama/config.h"
#include "examples/llama/int4_checkpoint.h"
#include "examples/llama/tensor_parallel.h"
#include "tileops/core/tensor_storage.h"

namespace tileops::llama {

struct LayerWeights {
  TensorStorage input_norm;  // [hidden]
  TensorStorage qkv;         // [q_size + 2·kv_size, hidden]: q rows, then k, then v
  TensorStorage qkv_bias;    // [q_size + 2·kv_size], or empty (Llama)
  TensorStorage o_proj;      // [hidden, q_size]
  TensorStorage post_norm;   // [hidden]
  TensorStorage gate_up;     // [2·intermediate, hidden]: gate rows, then up
  TensorStorage down;        // [hidden, intermediate]
};

struct Weights {
  TensorStorage embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  TensorStorage final_norm;  // [hidden]
  TensorStorage lm_head;     // [vocab, hidden], empty when tied to embed

  const Tensor& lm_head_view() const { return lm_head.view().defined() ? lm_head : embed; }
};

// Random weights from a seed, scaled so activations keep unit size through the layers. With a
// split `shard`: the same model's numbers, of which the rank keeps its part (tensor_parallel.h;
// a tied lm_head then gets the rank's rows of the embedding as its own copy).
Weights synthetic_weights(const Config& config, std::uint64_t seed, Shard shard = {});

// Loads Llama/Qwen2 checkpoint names (model.layers.N.self_attn.q_proj.weight, ...) from one
// .safetensors file or every .safetensors file of a directory, converting to config.dtype.
// A missing or wrongly shaped tensor is an error naming it. With `quantization` (config.json's
// quantization_config), a projection the checkpoint ships as GPTQ/AWQ int4
// (`<name>.qweight`, ...) is converted into a quantize_weight buffer in its slot
// (int4_checkpoint.h); the embedding, norms and lm_head stay float.
// `progress`, when given, is called after each layer with (layers loaded, layers). With a split
// `shard`, only the rank's rows and columns (tensor_parallel.h) are read from the mapped files
// and allocated (the embedding and norms whole); int4 checkpoints are refused then.
Weights load_safetensors_weights(
    const Config& config, const std::filesystem::path& file_or_dir,
    const std::optional<Int4Quantization>& quantization = {},
    const std::function<void(std::int64_t, std::int64_t)>& progress = {}, Shard shard = {});

// The weights under their checkpoint names (views into `weights`; q/k/v and gate/up split
// again), e.g. to write a .safetensors file.
std::vector<std::pair<std::string, Tensor>> checkpoint_tensors(const Config& config,
                                                               const Weights& weights);

}  // namespace tileops::llama
