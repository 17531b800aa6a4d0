// The shape of a Llama-architecture decoder (Llama, Qwen2): sizes, norms, rotary and dtype.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "tileops/core/data_type.h"

namespace tileops::llama {

struct Config {
  std::int64_t layers = 4;
  std::int64_t hidden = 1024;
  std::int64_t heads = 8;
  std::int64_t kv_heads = 2;
  std::int64_t head_size = 128;
  std::int64_t intermediate = 2816;
  std::int64_t vocab = 32000;
  std::int64_t max_positions = 4096;
  double rms_eps = 1e-6;
  double rope_theta = 10000.0;
  bool qkv_bias = false;        // Qwen2 has q/k/v biases, Llama has none
  bool tie_embeddings = false;  // lm_head shares the embedding table
  DataType dtype = DataType::kBFloat16;

  std::int64_t q_size() const { return heads * head_size; }
  std::int64_t kv_size() const { return kv_heads * head_size; }
  std::int64_t qkv_size() const { return q_size() + 2 * kv_size(); }
  // In double: sizes that validate() accepts can multiply past int64.
  double parameters() const;

  // Throws kInvalidArgument naming the field when the sizes cannot form a model.
  void validate() const;
  std::string describe() const;
};

// Reads a Hugging Face config.json (hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, head_dim, intermediate_size, vocab_size, rms_norm_eps, rope_theta,
// max_position_embeddings, tie_word_embeddings, model_type/attention_bias). dtype is kept from
// `base`: the model runs in the dtype the user asks for, whatever the checkpoint stores.
Config read_config_json(const std::filesystem::path& path, const Config& base);
// Writes the fields read_config_json reads (model_type "llama", or "qwen2" with qkv biases).
void write_config_json(const std::filesystem::path& path, const Config& config);

}  // namespace tileops::llama
