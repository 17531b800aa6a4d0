// The shape of a Llama-architecture decoder (Llama, Qwen2): sizes, norms, rotary and dtype.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "tileops/core/data_type.h"

namespace tileops::llama {

// Bounds of Config::validate(): far beyond any published model, small enough that every count
// derived from them (weights, caches, rotary table) fits int64 and the int32 indices.
inline constexpr std::int64_t kMaxModelSize = std::int64_t{1} << 24;  // hidden, heads, vocab, ...
inline constexpr std::int64_t kMaxLayers = std::int64_t{1} << 16;
inline constexpr std::int64_t kMaxHeadSize = 256;
inline constexpr std::int64_t kMaxPositions = std::int64_t{1} << 30;

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

  // Checked: an overflow (of a Config that validate() would refuse) is an error, not a wrap.
  std::int64_t q_size() const;
  std::int64_t kv_size() const;
  std::int64_t qkv_size() const;
  // In double: sizes that validate() accepts can multiply past int64.
  double parameters() const;

  // Throws kInvalidArgument naming the field when the sizes cannot form a model: every size
  // positive and within the bounds above, heads % kv_heads == 0, head_size even, rms_eps and
  // rope_theta finite and > 0, dtype a float the model runs in.
  void validate() const;
  std::string describe() const;
};

// Parses the text of a Hugging Face config.json (named `file_name` in errors): hidden_size,
// num_hidden_layers, num_attention_heads, intermediate_size and vocab_size are required;
// num_key_value_heads (default: the heads), head_dim (hidden_size / num_attention_heads, which
// must divide), max_position_embeddings and rms_norm_eps (default: `base`'s), rope_theta
// (10000), tie_word_embeddings, attention_bias (false) and model_type ("qwen2": q/k/v biases)
// are optional; null is absent. Every field is checked for its JSON type and range before
// anything is derived from it, and the result is validated; a text that is not a JSON object,
// a rope_scaling or a hidden_act other than "silu" (which this decoder does not implement) is
// an error. Errors are kInvalidArgument naming the file and the field. dtype is kept from
// `base`: the model runs in the dtype the user asks for, whatever the checkpoint stores.
Config parse_config_json(std::string_view text, const std::string& file_name, const Config& base);
// Reads the file and parses it with parse_config_json.
Config read_config_json(const std::filesystem::path& path, const Config& base);
// Writes the fields read_config_json reads (model_type "llama", or "qwen2" with qkv biases).
void write_config_json(const std::filesystem::path& path, const Config& config);

}  // namespace tileops::llama
