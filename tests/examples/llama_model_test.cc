// The decoder of examples/llama against an independent float64 model that runs one token at a
// time with its own dense KV history: prefill logits and 8 decode steps must match.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <ostream>
#include <random>
#include <string>

#include "examples/llama/generate.h"
#include "examples/llama/model.h"
#include "examples/llama/safetensors.h"
#include "examples/llama/weights.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

using Vec = std::vector<double>;

// y[r] = Σ_c W[r, c]·x[c] (+ b[r]) for a row-major [rows, x.size()] matrix.
Vec matvec(const Vec& w, const Vec& x, const Vec* bias = nullptr) {
  const std::size_t cols = x.size(), rows = w.size() / cols;
  Vec y(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double s = bias != nullptr ? (*bias)[r] : 0.0;
    for (std::size_t c = 0; c < cols; ++c) s += w[r * cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

Vec rms_norm(const Vec& x, const Vec& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  return y;
}

class ReferenceModel {
 public:
  ReferenceModel(const Config& c, const Weights& w, int sequences) : c_(c), history_(sequences) {
    auto d = [](const Tensor& t) { return testing::to_doubles(t); };
    embed_ = d(w.embed);
    final_norm_ = d(w.final_norm);
    lm_head_ = d(w.lm_head_view());
    for (const LayerWeights& lw : w.layers) {
      layers_.push_back({d(lw.input_norm), d(lw.qkv),
                         c.qkv_bias ? d(lw.qkv_bias) : Vec(c.qkv_size(), 0.0), d(lw.o_proj),
                         d(lw.post_norm), d(lw.gate_up), d(lw.down)});
    }
    for (auto& h : history_) h.resize(c.layers);
  }

  // Logits after appending `token` to sequence `seq`.
  Vec step(int seq, std::int64_t token) {
    const std::int64_t hidden = c_.hidden, d = c_.head_size, q_size = c_.q_size();
    const std::int64_t kv = c_.kv_size();
    const auto pos = static_cast<std::int64_t>(history_[seq][0].keys.size());
    Vec x(embed_.begin() + token * hidden, embed_.begin() + (token + 1) * hidden);
    for (std::int64_t l = 0; l < c_.layers; ++l) {
      const Layer& w = layers_[l];
      Vec qkv = matvec(w.qkv, rms_norm(x, w.input_norm, c_.rms_eps), &w.qkv_bias);
      for (std::int64_t head = 0; head < c_.heads + c_.kv_heads; ++head) rope(&qkv[head * d], pos);
      History& h = history_[seq][l];
      h.keys.emplace_back(qkv.begin() + q_size, qkv.begin() + q_size + kv);
      h.values.emplace_back(qkv.begin() + q_size + kv, qkv.end());
      Vec attn(q_size, 0.0);
      for (std::int64_t head = 0; head < c_.heads; ++head) {
        const std::int64_t g = head / (c_.heads / c_.kv_heads);
        Vec scores(pos + 1);
        double top = -INFINITY;
        for (std::int64_t t = 0; t <= pos; ++t) {
          double s = 0;
          for (std::int64_t i = 0; i < d; ++i) s += qkv[head * d + i] * h.keys[t][g * d + i];
          scores[t] = s / std::sqrt(static_cast<double>(d));
          top = std::max(top, scores[t]);
        }
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - top));
        for (std::int64_t t = 0; t <= pos; ++t) {
          for (std::int64_t i = 0; i < d; ++i) {
            attn[head * d + i] += scores[t] / sum * h.values[t][g * d + i];
          }
        }
      }
      const Vec o = matvec(w.o_proj, attn);
      for (std::int64_t i = 0; i < hidden; ++i) x[i] += o[i];
      const Vec gu = matvec(w.gate_up, rms_norm(x, w.post_norm, c_.rms_eps));
      Vec act(c_.intermediate);
      for (std::int64_t i = 0; i < c_.intermediate; ++i) {
        const double gate = gu[i];
        act[i] = gate / (1 + std::exp(-gate)) * gu[c_.intermediate + i];
      }
      const Vec down = matvec(w.down, act);
      for (std::int64_t i = 0; i < hidden; ++i) x[i] += down[i];
    }
    return matvec(lm_head_, rms_norm(x, final_norm_, c_.rms_eps));
  }

 private:
  struct Layer {
    Vec input_norm, qkv, qkv_bias, o_proj, post_norm, gate_up, down;
  };
  struct History {
    std::vector<Vec> keys, values;
  };

  // Neox-style rotation of one head (first half against second half).
  void rope(double* v, std::int64_t pos) const {
    const std::int64_t half = c_.head_size / 2;
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle =
          static_cast<double>(pos) * std::pow(c_.rope_theta, -2.0 * static_cast<double>(i) /
                                                                 static_cast<double>(c_.head_size));
      const double x1 = v[i], x2 = v[i + half];
      v[i] = x1 * std::cos(angle) - x2 * std::sin(angle);
      v[i + half] = x2 * std::cos(angle) + x1 * std::sin(angle);
    }
  }

  Config c_;
  Vec embed_, final_norm_, lm_head_;
  std::vector<Layer> layers_;
  std::vector<std::vector<History>> history_;  // [sequence][layer]
};

// The call raises tileops::Error whose message contains `text`.
template <typename Call>
void expect_error(Call&& call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error raised; expected one mentioning " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

Config tiny_config(DataType dtype, bool qkv_bias) {
  Config c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_size = 16;
  c.intermediate = 96;
  c.vocab = 101;
  c.max_positions = 64;
  c.qkv_bias = qkv_bias;
  c.dtype = dtype;
  return c;
}

// Largest |actual - expected| relative to the largest |expected| of the row set.
double relative_error(const Tensor& actual, std::int64_t row, const Vec& expected) {
  const Vec all = testing::to_doubles(actual);
  const auto vocab = static_cast<std::int64_t>(expected.size());
  double err = 0, scale = 1e-30;
  for (std::int64_t i = 0; i < vocab; ++i) {
    err = std::max(err, std::abs(all[row * vocab + i] - expected[i]));
    scale = std::max(scale, std::abs(expected[i]));
  }
  return err / scale;
}

struct Case {
  DataType dtype;
  bool qkv_bias;
  double tolerance;   // on max |error| / max |logit|
  bool tied = false;  // lm_head is the embedding table
};
// gtest would otherwise print the struct's bytes, padding included (uninitialised to valgrind).
void PrintTo(const Case& c, std::ostream* os) {
  *os << name_of(c.dtype) << (c.qkv_bias ? ", qkv bias" : "") << (c.tied ? ", tied" : "")
      << ", tolerance " << c.tolerance;
}

// The model's logits for three prompts and 8 decode steps against the float64 reference's,
// within `tolerance`.
void check_against_reference(const Config& config, const Weights& weights, Model model,
                             double tolerance) {
  ReferenceModel reference(config, weights, 3);

  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::int64_t> token(0, config.vocab - 1);
  std::vector<std::vector<std::int64_t>> prompts(3);
  const std::size_t lengths[] = {1, 17, 5};  // one token, across a block boundary, short
  for (int b = 0; b < 3; ++b) {
    for (std::size_t i = 0; i < lengths[b]; ++i) prompts[b].push_back(token(rng));
  }
  const Tensor prefill = model.prefill(prompts);
  for (int b = 0; b < 3; ++b) {
    Vec expected;
    for (std::int64_t t : prompts[b]) expected = reference.step(b, t);
    EXPECT_LE(relative_error(prefill, b, expected), tolerance) << "prefill, prompt " << b;
  }
  for (int step = 0; step < 8; ++step) {
    std::vector<std::int64_t> next(3);
    for (auto& t : next) t = token(rng);
    const Tensor logits = model.decode(next);
    for (int b = 0; b < 3; ++b) {
      EXPECT_LE(relative_error(logits, b, reference.step(b, next[b])), tolerance)
          << "decode step " << step << ", sequence " << b;
    }
  }
}

class LlamaModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(LlamaModelTest, PrefillAndEightDecodeStepsMatchTheFloat64Model) {
  const Case& param = GetParam();
  Config config = tiny_config(param.dtype, param.qkv_bias);
  config.tie_embeddings = param.tied;
  const Weights weights = synthetic_weights(config, 7);
  for (const bool pack : {true, false}) {  // linear_packed, and linear on the [N, K] weights
    SCOPED_TRACE(pack ? "packed weights" : "[N, K] weights");
    check_against_reference(config, weights,
                            Model(config, synthetic_weights(config, 7), 3, 40, 16, pack),
                            param.tolerance);
  }
}

// float32 differs from float64 by rounding only; 16-bit activations are rounded after every
// operator, which over 2 layers costs a few 16-bit ulps of the largest logit.
INSTANTIATE_TEST_SUITE_P(Dtypes, LlamaModelTest,
                         ::testing::Values(Case{DataType::kFloat32, false, 5e-6},
                                           Case{DataType::kFloat32, true, 5e-6},
                                           Case{DataType::kFloat32, false, 5e-6, true},
                                           Case{DataType::kBFloat16, true, 4e-2},
                                           Case{DataType::kFloat16, false, 6e-3}));

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("tileops_llama_" + std::to_string(::getpid()) + "_" + name);
}

TEST(LlamaWeights, SafetensorsRoundTripGivesTheSameLogits) {
  const Config config = tiny_config(DataType::kBFloat16, true);
  const Weights weights = synthetic_weights(config, 3);
  const auto path = temp_path("weights.safetensors");
  write_safetensors(path, checkpoint_tensors(config, weights));
  Model loaded(config, load_safetensors_weights(config, path), 1, 8);
  Model original(config, synthetic_weights(config, 3), 1, 8);
  const std::vector<std::vector<std::int64_t>> prompt{{5, 9, 2}};
  EXPECT_EQ(testing::to_doubles(loaded.prefill(prompt)),
            testing::to_doubles(original.prefill(prompt)));
  std::filesystem::remove(path);
}

// The format does not align tensors: one more header byte puts every float32 tensor off its
// alignment, which the loader copies aside before converting (UBSan would flag the reads).
TEST(LlamaWeights, UnalignedTensorsLoadTheSameWeights) {
  const Config config = tiny_config(DataType::kFloat32, false);
  const Weights weights = synthetic_weights(config, 3);
  const auto path = temp_path("unaligned.safetensors");
  write_safetensors(path, checkpoint_tensors(config, weights));
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GE(bytes.size(), 8u);
  std::uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<unsigned char>(bytes[i]);
  bytes.insert(8 + header, " ");  // JSON allows trailing space
  ++header;
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(header >> (8 * i));
  std::ofstream(path, std::ios::binary) << bytes;
  const Weights loaded = load_safetensors_weights(config, path);
  std::filesystem::remove(path);
  EXPECT_EQ(testing::to_doubles(loaded.embed), testing::to_doubles(weights.embed));
  EXPECT_EQ(testing::to_doubles(loaded.layers[1].qkv), testing::to_doubles(weights.layers[1].qkv));
  EXPECT_EQ(testing::to_doubles(loaded.lm_head), testing::to_doubles(weights.lm_head));
}

TEST(LlamaWeights, ReadsHuggingFaceConfig) {
  const auto path = temp_path("config.json");
  std::ofstream(path) << R"({"model_type": "qwen2", "hidden_size": 128, "num_hidden_layers": 3,
      "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 256,
      "vocab_size": 500, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0,
      "tie_word_embeddings": true})";
  const Config c = read_config_json(path, Config{});
  EXPECT_EQ(c.hidden, 128);
  EXPECT_EQ(c.layers, 3);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_size, 16);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  std::filesystem::remove(path);
}

TEST(LlamaWeights, BadCheckpointsAreRejectedByName) {
  const Config config = tiny_config(DataType::kFloat32, false);
  const Weights weights = synthetic_weights(config, 3);
  auto tensors = checkpoint_tensors(config, weights);
  const auto path = temp_path("bad.safetensors");

  tensors.erase(tensors.begin() + 3);  // layer 0's k_proj
  write_safetensors(path, tensors);
  expect_error([&] { (void)load_safetensors_weights(config, path); },
               "model.layers.0.self_attn.k_proj.weight");

  Config wider = config;
  wider.hidden = 32;
  wider.intermediate = 48;
  write_safetensors(path, checkpoint_tensors(config, weights));
  expect_error([&] { (void)load_safetensors_weights(wider, path); }, "model.embed_tokens.weight");

  std::filesystem::resize_file(path, 12);
  expect_error([&] { SafetensorsFile file(path); }, "header length");
  std::filesystem::remove(path);
}

TEST(LlamaModel, BadRequestsAreRejected) {
  const Config config = tiny_config(DataType::kFloat32, false);
  Model model(config, synthetic_weights(config, 1), 2, 4);
  expect_error([&] { model.prefill({}); }, "prompts");
  expect_error([&] { model.prefill({{1, 2, 3, 4, 5}}); }, "prompts");
  model.prefill({{1, 2, 3}, {4}});
  const std::vector<std::int64_t> one{1};
  expect_error([&] { model.decode(one); }, "tokens");
  const std::vector<std::int64_t> two{1, 2};
  model.decode(two);
  expect_error([&] { model.decode(two); }, "full");
}

// Sizes from the caller are checked before anything is allocated or packed: the block count
// wrapped, (max_context + block_size - 1) overflowed, and the rotary table was built for all
// max_positions (2^30 positions: 64 GiB) however short the contexts.
TEST(LlamaModel, CacheSizesAreCheckedBeforeAllocating) {
  Config config = tiny_config(DataType::kFloat32, false);
  config.max_positions = kMaxPositions;
  constexpr std::int64_t kHuge = std::numeric_limits<std::int64_t>::max();
  expect_error([&] { (void)cache_geometry(config, 2, 16, kHuge); }, "overflows int64");
  expect_error([&] { (void)cache_geometry(config, std::int64_t{1} << 40, 16, 16); }, "int32");
  expect_error([&] { (void)cache_geometry(config, 1, std::int64_t{1} << 31, 16); },
               "max_positions");
  expect_error([&] { Model m(config, synthetic_weights(config, 1), std::int64_t{1} << 40, 16); },
               "int32");
  const CacheGeometry g = cache_geometry(config, 3, 40, 16);
  EXPECT_EQ(g.blocks_per_sequence, 3);
  EXPECT_EQ(g.blocks, 9);
  EXPECT_EQ(g.bytes, 2 * config.layers * 9 * 16 * config.kv_heads * config.head_size * 4);
  Model model(config, synthetic_weights(config, 1), 1, 8);  // a table of 8 positions
  EXPECT_EQ(model.prefill({{1, 2, 3}}).size(1), config.vocab);
  Config fewer = tiny_config(DataType::kFloat32, false);
  fewer.layers = 1;
  expect_error([&] { Model m(config, synthetic_weights(fewer, 1), 1, 8); }, "layers");
}

TEST(LlamaGenerate, TopKOneIsGreedyAndSeedsRepeat) {
  const Config config = tiny_config(DataType::kFloat32, false);
  Model model(config, synthetic_weights(config, 5), 2, 16);
  const std::vector<std::vector<std::int64_t>> prompts{{3, 1, 4}, {1, 5}};
  const Vec logits = testing::to_doubles(model.prefill(prompts));
  const Generation greedy = generate(model, prompts, 4, Sampling{1, 1.0, 0});
  for (int b = 0; b < 2; ++b) {
    const auto row = logits.begin() + b * config.vocab;
    EXPECT_EQ(greedy.tokens[b][0], std::max_element(row, row + config.vocab) - row);
  }
  const Generation a = generate(model, prompts, 6, Sampling{20, 0.8, 42});
  const Generation b = generate(model, prompts, 6, Sampling{20, 0.8, 42});
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.decode_tokens, 10);
}

}  // namespace
}  // namespace tileops::llama
