#include "examples/llama/config.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "examples/llama/json_number.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

void require(bool ok, const char* field, const std::string& expected, std::int64_t actual) {
  if (!ok) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama config", field, expected,
                         std::to_string(actual));
  }
}

std::string range(std::int64_t lo, std::int64_t hi) {
  return "an integer >= " + std::to_string(lo) + " and <= " + std::to_string(hi);
}

// The fields of one config.json, each checked for its JSON type and range as it is read.
class ConfigJson {
 public:
  ConfigJson(const nlohmann::json& j, const std::string& file) : j_(j), file_(file) {}

  [[noreturn]] void fail(std::string_view key, const std::string& expected,
                         const std::string& got) const {
    throw Error(ErrorKind::kInvalidArgument, "llama config " + file_ + ": field '" +
                                                 std::string(key) + "': expected " + expected +
                                                 ", got " + got);
  }

  // The value, or nullptr when the key is absent or null.
  const nlohmann::json* find(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  // An integer in [lo, hi]; `fallback` when absent (required when there is none).
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi,
                       std::optional<std::int64_t> fallback = std::nullopt) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) {
      if (!fallback) fail(key, range(lo, hi), "nothing (the field is required)");
      return *fallback;
    }
    const std::optional<std::int64_t> n = json_int64(*v);
    if (!n || *n < lo || *n > hi) fail(key, range(lo, hi), json_excerpt(*v));
    return *n;
  }

  // A finite number > 0.
  double positive(const char* key, double fallback) const {
    const nlohmann::json* v = find(key);
    if (v == nullptr) return fallback;
    const double x = v->is_number() ? v->get<double>() : 0.0;
    if (!(std::isfinite(x) && x > 0)) fail(key, "a finite number > 0", json_excerpt(*v));
    return x;
  }

  bool boolean(const char* key) const {
    const nlohmann::json* v = find(key);
    if (v != nullptr && !v->is_boolean()) fail(key, "true or false", json_excerpt(*v));
    return v != nullptr && v->get<bool>();
  }

  std::string text(const char* key) const {
    const nlohmann::json* v = find(key);
    if (v != nullptr && !v->is_string()) fail(key, "a string", json_excerpt(*v));
    return v != nullptr ? v->get<std::string>() : std::string();
  }

 private:
  const nlohmann::json& j_;
  const std::string& file_;
};

}  // namespace

std::int64_t Config::q_size() const { return checked_mul(heads, head_size, "llama config q_size"); }

std::int64_t Config::kv_size() const {
  return checked_mul(kv_heads, head_size, "llama config kv_size");
}

std::int64_t Config::qkv_size() const {
  return checked_add(q_size(), checked_mul(2, kv_size(), "llama config qkv_size"),
                     "llama config qkv_size");
}

double Config::parameters() const {
  const auto h = static_cast<double>(hidden), kv = static_cast<double>(kv_heads);
  const double q = static_cast<double>(heads) * static_cast<double>(head_size);
  const double qkv = q + 2 * kv * static_cast<double>(head_size);
  const double per_layer =
      h * qkv + (qkv_bias ? qkv : 0) + q * h + 3 * h * static_cast<double>(intermediate) + 2 * h;
  return static_cast<double>(layers) * per_layer +
         static_cast<double>(vocab) * h * (tie_embeddings ? 1 : 2) + h;
}

void Config::validate() const {
  require(layers >= 1 && layers <= kMaxLayers, "layers", range(1, kMaxLayers), layers);
  for (const auto& [field, value] :
       {std::pair{"hidden", hidden}, std::pair{"heads", heads},
        std::pair{"intermediate", intermediate}, std::pair{"vocab", vocab}}) {
    require(value >= 1 && value <= kMaxModelSize, field, range(1, kMaxModelSize), value);
  }
  require(kv_heads >= 1 && kv_heads <= heads && heads % kv_heads == 0, "kv_heads",
          "a divisor of heads (" + std::to_string(heads) + ")", kv_heads);
  require(head_size >= 2 && head_size % 2 == 0 && head_size <= kMaxHeadSize, "head_size",
          "even and in [2, " + std::to_string(kMaxHeadSize) + "]", head_size);
  require(max_positions >= 1 && max_positions <= kMaxPositions, "max_positions",
          range(1, kMaxPositions), max_positions);
  if (!(std::isfinite(rms_eps) && rms_eps > 0) || !(std::isfinite(rope_theta) && rope_theta > 0)) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama config: rms_eps and rope_theta must be finite and > 0; got " +
                    std::to_string(rms_eps) + " and " + std::to_string(rope_theta));
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

Config parse_config_json(std::string_view text, const std::string& file_name, const Config& base) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama config " + file_name + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama config " + file_name + ": expected a JSON object, got " + json_excerpt(j));
  }
  const ConfigJson f(j, file_name);
  // Features this decoder does not implement would give wrong logits, not an error.
  if (f.find("rope_scaling") != nullptr) {
    f.fail("rope_scaling", "null or absent (rotary scaling is not implemented)",
           json_excerpt(*f.find("rope_scaling")));
  }
  if (const std::string act = f.text("hidden_act"); !act.empty() && act != "silu") {
    f.fail("hidden_act", "\"silu\"", "\"" + act + "\"");
  }
  Config c = base;
  c.hidden = f.integer("hidden_size", 1, kMaxModelSize);
  c.layers = f.integer("num_hidden_layers", 1, kMaxLayers);
  c.heads = f.integer("num_attention_heads", 1, kMaxModelSize);
  c.kv_heads = f.integer("num_key_value_heads", 1, c.heads, c.heads);
  if (c.heads % c.kv_heads != 0) {
    f.fail("num_key_value_heads",
           "a divisor of num_attention_heads (" + std::to_string(c.heads) + ")",
           std::to_string(c.kv_heads));
  }
  if (f.find("head_dim") == nullptr && c.hidden % c.heads != 0) {
    f.fail("hidden_size",
           "a multiple of num_attention_heads (" + std::to_string(c.heads) + ") or a head_dim",
           std::to_string(c.hidden));
  }
  c.head_size = f.integer("head_dim", 2, kMaxHeadSize, c.hidden / c.heads);
  if (c.head_size < 2 || c.head_size > kMaxHeadSize || c.head_size % 2 != 0) {
    f.fail(f.find("head_dim") != nullptr ? "head_dim" : "hidden_size",
           "a head size (head_dim, or hidden_size / num_attention_heads) even and in [2, " +
               std::to_string(kMaxHeadSize) + "]",
           std::to_string(c.head_size));
  }
  c.intermediate = f.integer("intermediate_size", 1, kMaxModelSize);
  c.vocab = f.integer("vocab_size", 1, kMaxModelSize);
  c.max_positions = f.integer("max_position_embeddings", 1, kMaxPositions, base.max_positions);
  c.rms_eps = f.positive("rms_norm_eps", base.rms_eps);
  c.rope_theta = f.positive("rope_theta", 10000.0);
  c.tie_embeddings = f.boolean("tie_word_embeddings");
  c.qkv_bias = f.text("model_type") == "qwen2" || f.boolean("attention_bias");
  try {
    c.validate();
  } catch (const Error& e) {  // only `base`'s fields can fail here (dtype)
    throw Error(e.kind(), "llama config " + file_name + ": " + e.what());
  }
  return c;
}

Config read_config_json(const std::filesystem::path& path, const Config& base) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::kInvalidArgument, "llama config " + path.string() + ": cannot open");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad())
    throw Error(ErrorKind::kInvalidArgument, "llama config " + path.string() + ": cannot read");
  return parse_config_json(text, path.string(), base);
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
