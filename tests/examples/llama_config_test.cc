// examples/llama's config.json reader on hostile and careless files: every field is checked for
// its JSON type and range before anything is derived from it, and errors name the file and the
// field (one test per class of defect).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>

#include "examples/llama/config.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

// A valid config, with `fields` ("\"key\": value" texts) replacing or adding fields.
std::string config_text(std::initializer_list<std::string> fields = {}) {
  std::string text = R"({"model_type": "llama", "num_hidden_layers": 2, "vocab_size": 101,
      "intermediate_size": 96, "rms_norm_eps": 1e-5, "max_position_embeddings": 64)";
  bool hidden = false, heads = false;
  for (const std::string& f : fields) {
    hidden = hidden || f.find("\"hidden_size\"") != std::string::npos;
    heads = heads || f.find("\"num_attention_heads\"") != std::string::npos;
  }
  if (!hidden) text += R"(, "hidden_size": 64)";
  if (!heads) text += R"(, "num_attention_heads": 4)";
  for (const std::string& f : fields) text += ", " + f;
  return text + "}";
}

// Writes `text` as config.json of a fresh directory and reads it back.
Config read_text(const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tileops_config_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "config.json";
  std::ofstream(path) << text;
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  return read_config_json(path, Config{});
}

// Reading `text` raises tileops::Error naming config.json and every one of `words`.
void expect_rejected(const std::string& text, std::initializer_list<std::string> words) {
  SCOPED_TRACE(text);
  try {
    (void)read_text(text);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << message;
    EXPECT_NE(message.find("config.json"), std::string::npos) << message;
    for (const std::string& w : words) EXPECT_NE(message.find(w), std::string::npos) << message;
  }
}

TEST(LlamaConfig, ValidFileGivesItsSizesAndDefaults) {
  const Config c = read_text(config_text({R"("num_key_value_heads": 2)"}));
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_size, 16);
  EXPECT_EQ(c.max_positions, 64);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.qkv_bias);
  // null is absent: the defaults apply.
  const Config d = read_text(config_text({R"("head_dim": null, "rope_scaling": null)"}));
  EXPECT_EQ(d.head_size, 16);
  EXPECT_EQ(d.kv_heads, 4);
}

// num_attention_heads 0 was a SIGFPE (hidden_size / heads for the default head_dim).
TEST(LlamaConfig, ZeroSizesAreRejectedByField) {
  expect_rejected(config_text({R"("num_attention_heads": 0)"}), {"num_attention_heads"});
  expect_rejected(config_text({R"("num_attention_heads": 0, "head_dim": 16)"}),
                  {"num_attention_heads"});
  expect_rejected(config_text({R"("num_key_value_heads": 0)"}), {"num_key_value_heads"});
  expect_rejected(config_text({R"("hidden_size": 0)"}), {"hidden_size"});
  expect_rejected(config_text({R"("vocab_size": 0)"}), {"vocab_size"});
  expect_rejected(config_text({R"("max_position_embeddings": 0)"}), {"max_position_embeddings"});
  expect_rejected(config_text({R"("rms_norm_eps": 0)"}), {"rms_norm_eps"});
  expect_rejected(config_text({R"("rope_theta": 0)"}), {"rope_theta"});
}

TEST(LlamaConfig, NegativeSizesAreRejectedByField) {
  expect_rejected(config_text({R"("hidden_size": -64)"}), {"hidden_size"});
  expect_rejected(config_text({R"("num_hidden_layers": -1)"}), {"num_hidden_layers"});
  expect_rejected(config_text({R"("intermediate_size": -96)"}), {"intermediate_size"});
  expect_rejected(config_text({R"("head_dim": -16)"}), {"head_dim"});
  expect_rejected(config_text({R"("rms_norm_eps": -1e-5)"}), {"rms_norm_eps"});
}

// max_position_embeddings 2^60 overflowed the rotary table; 2^64 - 1 wrapped to -1.
TEST(LlamaConfig, HugeSizesAreRejectedByField) {
  expect_rejected(config_text({R"("max_position_embeddings": 1152921504606846976)"}),
                  {"max_position_embeddings"});
  expect_rejected(config_text({R"("num_hidden_layers": 18446744073709551615)"}),
                  {"num_hidden_layers"});
  expect_rejected(config_text({R"("vocab_size": 9223372036854775807)"}), {"vocab_size"});
  expect_rejected(config_text({R"("head_dim": 4096)"}), {"head_dim"});
  expect_rejected(config_text({R"("intermediate_size": 16777217)"}), {"intermediate_size"});
}

TEST(LlamaConfig, WrongTypesAreRejectedByField) {
  expect_rejected(config_text({R"("hidden_size": "64")"}), {"hidden_size"});
  expect_rejected(config_text({R"("hidden_size": 64.5)"}), {"hidden_size"});  // was truncated
  expect_rejected(config_text({R"("num_hidden_layers": [2])"}), {"num_hidden_layers"});
  expect_rejected(config_text({R"("rope_theta": "big")"}), {"rope_theta"});
  expect_rejected(config_text({R"("tie_word_embeddings": 1)"}), {"tie_word_embeddings"});
  expect_rejected(config_text({R"("model_type": 2)"}), {"model_type"});
}

// A file that is valid JSON but not an object was read as all defaults.
TEST(LlamaConfig, NotAnObjectIsRejected) {
  for (const char* text : {"[1, 2]", "null", "3", "\"llama\""}) {
    expect_rejected(text, {"object"});
  }
  expect_rejected("{\"hidden_size\": 64", {"JSON"});
  expect_rejected("", {"JSON"});
}

// Sizes missing from the file were silently taken from the command line's defaults.
TEST(LlamaConfig, RequiredFieldsMustBePresent) {
  expect_rejected(R"({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                      "intermediate_size": 96})",
                  {"vocab_size", "required"});
  expect_rejected(R"({})", {"required"});
}

TEST(LlamaConfig, RelationsBetweenFieldsAreChecked) {
  expect_rejected(config_text({R"("num_key_value_heads": 3)"}), {"num_key_value_heads"});
  expect_rejected(config_text({R"("num_key_value_heads": 8)"}), {"num_key_value_heads"});
  expect_rejected(config_text({R"("hidden_size": 66)"}), {"hidden_size"});  // 66 / 4 heads
  expect_rejected(config_text({R"("head_dim": 15)"}), {"head_dim"});        // odd
}

// Features this decoder does not implement would silently give other logits.
TEST(LlamaConfig, UnimplementedFeaturesAreRejected) {
  expect_rejected(config_text({R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})"}),
                  {"rope_scaling"});
  expect_rejected(config_text({R"("hidden_act": "gelu")"}), {"hidden_act"});
}

TEST(LlamaConfig, ParseNamesTheFileItIsGiven) {
  try {
    (void)parse_config_json(R"({"hidden_size": 0})", "my/config.json", Config{});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my/config.json"), std::string::npos) << e.what();
  }
  const Config c = parse_config_json(config_text(), "x", Config{});
  EXPECT_EQ(c.layers, 2);
}

TEST(LlamaConfig, WrittenConfigReadsBack) {
  Config c;
  c.layers = 3;
  c.kv_heads = 4;
  c.head_size = 64;
  c.qkv_bias = true;
  c.tie_embeddings = true;
  c.rope_theta = 1e6;
  const auto path = std::filesystem::temp_directory_path() /
                    ("tileops_config_test_" + std::to_string(::getpid()) + ".json");
  write_config_json(path, c);
  const Config r = read_config_json(path, Config{});
  std::filesystem::remove(path);
  EXPECT_EQ(r.describe(), c.describe());
  EXPECT_TRUE(r.qkv_bias && r.tie_embeddings);
  EXPECT_EQ(r.max_positions, c.max_positions);
  EXPECT_DOUBLE_EQ(r.rope_theta, 1e6);
}

TEST(LlamaConfig, ValidateRefusesWhatTheFileReaderRefuses) {
  Config c;
  c.max_positions = std::int64_t{1} << 60;
  EXPECT_THROW(c.validate(), Error);
  c = Config{};
  c.rms_eps = std::numeric_limits<double>::infinity();
  EXPECT_THROW(c.validate(), Error);
  c = Config{};
  c.heads = std::int64_t{1} << 62;  // q_size() would wrap
  EXPECT_THROW(c.validate(), Error);
  EXPECT_THROW((void)c.q_size(), Error);
}

}  // namespace
}  // namespace tileops::llama
