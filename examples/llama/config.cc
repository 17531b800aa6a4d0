#include "examples/llama/config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

void require(bool ok, const char* field, const std::string& expected, std::int64_t actual) {
  if (!ok) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama config", field, expected,
                         std::to_string(actual));
  }
}

}  // namespace

double Config::parameters() const {
  const auto h = static_cast<double>(hidden), qkv = static_cast<double>(qkv_size());
  const double per_layer = h * qkv + (qkv_bias ? qkv : 0) + static_cast<double>(q_size()) * h +
                           3 * h * static_cast<double>(intermediate) + 2 * h;
  return static_cast<double>(layers) * per_layer +
         static_cast<double>(vocab) * h * (tie_embeddings ? 1 : 2) + h;
}

void Config::validate() const {
  require(layers >= 1, "layers", ">= 1", layers);
  require(hidden >= 1, "hidden", ">= 1", hidden);
  require(heads >= 1, "heads", ">= 1", heads);
  require(kv_heads >= 1 && heads % kv_heads == 0, "kv_heads", "a divisor of heads", kv_heads);
  require(head_size >= 2 && head_size % 2 == 0 && head_size <= 256, "head_size",
          "even and in [2, 256]", head_size);
  require(intermediate >= 1, "intermediate", ">= 1", intermediate);
  require(vocab >= 1, "vocab", ">= 1", vocab);
  require(max_positions >= 1, "max_positions", ">= 1", max_positions);
  // Sizes far beyond any model would overflow the int64 counts derived from them.
  constexpr std::int64_t kMaxSize = std::int64_t{1} << 24, kMaxLayers = std::int64_t{1} << 16;
  require(layers <= kMaxLayers, "layers", "<= " + std::to_string(kMaxLayers), layers);
  for (const auto& [field, value] :
       {std::pair{"hidden", hidden}, std::pair{"heads", heads},
        std::pair{"intermediate", intermediate}, std::pair{"vocab", vocab}}) {
    require(value <= kMaxSize, field, "<= " + std::to_string(kMaxSize), value);
  }
  if (!(rms_eps > 0) || !(rope_theta > 0)) {
    throw Error(ErrorKind::kInvalidArgument, "llama config: rms_eps and rope_theta must be > 0");
  }
  if (dtype != DataType::kFloat32 && dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
    throw_argument_error(ErrorKind::kInvalidType, "llama config", "dtype",
                         "float32, float16 or bfloat16", std::string(name_of(dtype)));
  }
}

std::string Config::describe() const {
  return std::to_string(layers) + " layers, hidden " + std::to_string(hidden) + ", heads " +
         std::to_string(heads) + "/" + std::to_string(kv_heads) + " x " +
         std::to_string(head_size) + ", intermediate " + std::to_string(intermediate) + ", vocab " +
         std::to_string(vocab) + ", " + std::string(name_of(dtype)) + ", " +
         std::to_string(static_cast<std::int64_t>(parameters() / 1e6)) + "M parameters";
}

Config read_config_json(const std::filesystem::path& path, const Config& base) {
  std::ifstream in(path);
  if (!in) {
    throw Error(ErrorKind::kInvalidArgument, "llama: cannot open config " + path.string());
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama: config " + path.string() + " is not valid JSON: " + e.what());
  }
  Config c = base;
  auto get = [&](const char* key, auto fallback) {
    return j.contains(key) && !j[key].is_null() ? j[key].get<decltype(fallback)>() : fallback;
  };
  try {
    c.hidden = get("hidden_size", c.hidden);
    c.layers = get("num_hidden_layers", c.layers);
    c.heads = get("num_attention_heads", c.heads);
    c.kv_heads = get("num_key_value_heads", c.heads);
    c.head_size = get("head_dim", c.hidden / c.heads);
    c.intermediate = get("intermediate_size", c.intermediate);
    c.vocab = get("vocab_size", c.vocab);
    c.max_positions = get("max_position_embeddings", c.max_positions);
    c.rms_eps = get("rms_norm_eps", c.rms_eps);
    c.rope_theta = get("rope_theta", 10000.0);
    c.tie_embeddings = get("tie_word_embeddings", false);
    c.qkv_bias = get("model_type", std::string()) == "qwen2" || get("attention_bias", false);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama: config " + path.string() + " has a field of the wrong type: " + e.what());
  }
  c.validate();
  return c;
}

void write_config_json(const std::filesystem::path& path, const Config& config) {
  const nlohmann::json j = {
      {"model_type", config.qkv_bias ? "qwen2" : "llama"},
      {"hidden_size", config.hidden},
      {"num_hidden_layers", config.layers},
      {"num_attention_heads", config.heads},
      {"num_key_value_heads", config.kv_heads},
      {"head_dim", config.head_size},
      {"intermediate_size", config.intermediate},
      {"vocab_size", config.vocab},
      {"max_position_embeddings", config.max_positions},
      {"rms_norm_eps", config.rms_eps},
      {"rope_theta", config.rope_theta},
      {"tie_word_embeddings", config.tie_embeddings},
      {"torch_dtype", std::string(name_of(config.dtype))},
  };
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw Error(ErrorKind::kInvalidArgument, "llama: cannot write " + path.string());
}

}  // namespace tileops::llama
