// The decoder of examples/llama against an independent float64 model that runs one token at a
// time with its own dense KV history: prefill logits and 8 decode steps must match.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <tuple>

#include "examples/llama/generate.h"
#include "examples/llama/int4_checkpoint.h"
#include "examples/llama/model.h"
#include "examples/llama/quantize.h"
#include "examples/llama/safetensors.h"
#include "examples/llama/weights.h"
#include "tests/support/scoped_env.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/error.h"
#include "tileops/ops/cast.h"

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

// The [N, K] weight a quantize_weight buffer stands for, decoded from the documented layout
// (docs/quantized-weights.md: header, tiles of 4 rows, per group the rows' float32 scales [and
// zero points], then the rows' codes in interleaved runs of up to 64 bytes) in float64:
// w = scale · (code − zero).
Vec dequantized(const Tensor& q) {
  const auto* p = static_cast<const unsigned char*>(q.data());
  const auto at = [&](std::int64_t offset, auto value) {
    std::memcpy(&value, p + offset, sizeof(value));
    return value;
  };
  const int bits = p[6];
  const bool symmetric = p[7] != 0;
  const std::int64_t group_size = at(8, std::int32_t{}), n = at(16, std::int64_t{});
  const std::int64_t k = at(24, std::int64_t{});
  const std::int64_t k_padded = group_size == 0 ? (k + 63) / 64 * 64 : k;
  const std::int64_t group = group_size == 0 ? k_padded : group_size, groups = k_padded / group;
  const std::int64_t meta = symmetric ? 16 : 32, row_bytes = group * bits / 8;
  const std::int64_t run = std::min<std::int64_t>(64, row_bytes);
  Vec w(static_cast<std::size_t>(n * k));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t block = 64 + ((i / 4) * groups + g) * (meta + 4 * row_bytes);
      const double scale = at(block + (i % 4) * 4, float{});
      const double zero = !symmetric ? at(block + 16 + (i % 4) * 4, float{}) : bits == 4 ? 8 : 0;
      // Byte b of the row's codes of this group.
      const auto byte = [&](std::int64_t b) {
        return p[block + meta + b / run * 4 * run + (i % 4) * run + b % run];
      };
      for (std::int64_t j = 0; j < group && g * group + j < k; ++j) {
        const int code = bits == 8       ? static_cast<signed char>(byte(j))
                         : j < group / 2 ? byte(j) & 15
                                         : byte(j - group / 2) >> 4;
        w[i * k + g * group + j] = scale * (code - zero);
      }
    }
  }
  return w;
}

// A weight in float64: its values, or what its quantized buffer stands for.
Vec weight_doubles(const Tensor& t) {
  return is_quantized(t) ? dequantized(t) : testing::to_doubles(t);
}

class ReferenceModel {
 public:
  ReferenceModel(const Config& c, const Weights& w, int sequences) : c_(c), history_(sequences) {
    auto d = [](const Tensor& t) { return weight_doubles(t); };
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
  // linear_packed, and linear on the [N, K] weights; on CPUs with AMX the model packs bfloat16
  // weights only with TILEOPS_AMX=0 (ops::linear_packing_pays).
  for (const char* amx : {"1", "0"}) {
    const testing::ScopedEnv amx_env("TILEOPS_AMX", amx);
    for (const bool pack : {true, false}) {
      SCOPED_TRACE(std::string(pack ? "packed weights" : "[N, K] weights") +
                   ", TILEOPS_AMX=" + amx);
      check_against_reference(config, weights,
                              Model(config, synthetic_weights(config, 7), 3, 40, 16, pack),
                              param.tolerance);
    }
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

Weights quantized_weights(const Config& config, std::uint64_t seed, WeightQuantization q) {
  Weights w = synthetic_weights(config, seed);
  quantize_weights(w, q);
  return w;
}

// The plumbing: a quantized model against the float64 model of its own dequantized weights,
// within the float32 rounding of linear_quantized (as for the float model above).
TEST(LlamaQuantized, MatchesTheFloat64ModelOfItsDequantizedWeights) {
  for (const bool tied : {false, true}) {
    Config config = tiny_config(DataType::kFloat32, true);
    config.intermediate = 128;  // every K a multiple of 64
    config.tie_embeddings = tied;
    for (const WeightQuantization q :
         {WeightQuantization{8, -1}, WeightQuantization{4, 32}, WeightQuantization{4, 64}}) {
      SCOPED_TRACE(::testing::Message()
                   << "int" << q.bits << " group " << q.group() << (tied ? ", tied" : ""));
      const Weights weights = quantized_weights(config, 7, q);
      ASSERT_TRUE(is_quantized(weights.layers[1].gate_up));
      ASSERT_TRUE(is_quantized(weights.lm_head));
      EXPECT_EQ(weights.lm_head.view().data_as<unsigned char>()[6], 8);  // the head is int8
      check_against_reference(config, weights,
                              Model(config, quantized_weights(config, 7, q), 3, 40), 2e-5);
    }
  }
}

// Accuracy: int8 per channel against the float64 model of the original weights. Per-channel
// rounding moves each weight by up to max|row| / 254; over 2 layers and the head that measured
// at most 1.5e-2 of the largest logit in float32 and 2.2e-2 in bfloat16 (whose own activation
// rounding alone is allowed 4e-2 above): the documented tolerances are 3e-2 and 5e-2.
TEST(LlamaQuantized, Int8PerChannelLogitsStayNearTheFloat64Model) {
  for (const auto& [dtype, tolerance] :
       {std::pair{DataType::kFloat32, 3e-2}, std::pair{DataType::kBFloat16, 5e-2}}) {
    SCOPED_TRACE(name_of(dtype));
    const Config config = tiny_config(dtype, false);
    check_against_reference(config, synthetic_weights(config, 7),
                            Model(config, quantized_weights(config, 7, {8, -1}), 3, 40), tolerance);
  }
}

// int4 (groups of 32): greedy decoding picks the same tokens as the float64 model of the same
// dequantized weights, for three prompts over 12 steps.
TEST(LlamaQuantized, Int4GreedyTokensMatchTheFloat64ModelOfTheDequantizedWeights) {
  const Config config = tiny_config(DataType::kFloat32, false);
  const WeightQuantization q{4, 32};
  ReferenceModel reference(config, quantized_weights(config, 5, q), 3);
  Model model(config, quantized_weights(config, 5, q), 3, 40);
  const std::vector<std::vector<std::int64_t>> prompts{{3}, {1, 4, 1, 5, 9, 2, 6}, {50, 51}};
  constexpr int kSteps = 12;
  const Generation g = generate(model, prompts, kSteps, Sampling{1, 1.0, 0});
  double closest = INFINITY;  // the smallest gap between the reference's top two logits
  for (int b = 0; b < 3; ++b) {
    Vec logits;
    for (std::int64_t t : prompts[b]) logits = reference.step(b, t);
    std::vector<std::int64_t> expected;
    for (int i = 0; i < kSteps; ++i) {
      Vec sorted = logits;
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      closest = std::min(closest, sorted[0] - sorted[1]);
      expected.push_back(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (i + 1 < kSteps) logits = reference.step(b, expected.back());
    }
    EXPECT_EQ(g.tokens[b], expected) << "prompt " << b;
  }
  // Every choice was clear of float32 rounding (2e-5 of the largest logit, ~1e-4 here), so a
  // mismatch is a wrong weight, not a tie.
  EXPECT_GT(closest, 1e-3);
}

TEST(LlamaQuantized, BadOptionsAreRejectedByName) {
  const Config config = tiny_config(DataType::kFloat32, false);
  Weights w = synthetic_weights(config, 1);
  expect_error([&] { quantize_weights(w, {6, -1}); }, "--quantize");
  expect_error([&] { quantize_weights(w, {4, 0}); }, "layer 0 q/k/v");
  Config odd = config;
  odd.intermediate = 80;  // down's K is not a multiple of 64
  Weights v = synthetic_weights(odd, 1);
  expect_error([&] { quantize_weights(v, {4, 64}); }, "layer 0 down");
}

// One linear as a GPTQ or AWQ checkpoint ships it, packed here from known codes [n][k] (0..15),
// zero points [groups][n] and float16 scales [groups][n], following docs/quantized-weights.md.
struct PackedInt4 {
  TensorStorage qweight, qzeros, scales, g_idx;
  Int4Linear linear(const std::string& name, std::int64_t n) const {
    return {name, qweight, qzeros, scales, g_idx, n};
  }
};

PackedInt4 pack_int4(Int4Method method, int zero_offset, const std::vector<int>& codes,
                     const std::vector<int>& zeros, const std::vector<float>& scales,
                     std::int64_t n, std::int64_t k, std::int64_t group) {
  constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // column of each nibble
  const bool gptq = method == Int4Method::kGptq;
  const std::int64_t groups = k / group;
  PackedInt4 p;
  p.qweight = TensorStorage(gptq ? Dims{k / 8, n} : Dims{k, n / 8}, DataType::kInt32);
  auto* qw = p.qweight.view().data_as<std::int32_t>();
  for (std::int64_t r = 0; r < p.qweight.view().size(0); ++r) {
    for (std::int64_t c = 0; c < p.qweight.view().size(1); ++c) {
      std::uint32_t w = 0;
      for (int i = 0; i < 8; ++i) {
        const int code = gptq ? codes[c * k + r * 8 + i] : codes[(c * 8 + kAwqOrder[i]) * k + r];
        w |= static_cast<std::uint32_t>(code) << (4 * i);
      }
      qw[r * p.qweight.view().size(1) + c] = static_cast<std::int32_t>(w);
    }
  }
  p.qzeros = TensorStorage({groups, n / 8}, DataType::kInt32);
  for (std::int64_t g = 0; g < groups; ++g) {
    for (std::int64_t c = 0; c < n / 8; ++c) {
      std::uint32_t w = 0;
      for (int i = 0; i < 8; ++i) {
        const int z = zeros[g * n + c * 8 + (gptq ? i : kAwqOrder[i])] - zero_offset;
        w |= static_cast<std::uint32_t>(z & 15) << (4 * i);
      }
      p.qzeros.view().data_as<std::int32_t>()[g * (n / 8) + c] = static_cast<std::int32_t>(w);
    }
  }
  TensorStorage f32({groups, n}, DataType::kFloat32);
  std::copy(scales.begin(), scales.end(), f32.view().data_as<float>());
  p.scales = TensorStorage({groups, n}, DataType::kFloat16);
  ops::cast(f32, p.scales);
  if (gptq) {
    p.g_idx = TensorStorage({k}, DataType::kInt32);
    for (std::int64_t i = 0; i < k; ++i) {
      p.g_idx.view().data_as<std::int32_t>()[i] = static_cast<std::int32_t>(i / group);
    }
  }
  return p;
}

// Known codes, zero points and scales of two linears (stacked as q and k would be), packed as
// each method ships them, convert into a buffer that dequantizes to scale · (code − zero)
// exactly: GPTQ v1 (zero points stored minus 1, so 16 wraps to 15), GPTQ v2, AWQ, and GPTQ's
// symmetric checkpoints (every zero point 8), which become the symmetric format.
TEST(LlamaInt4Checkpoint, GptqAndAwqLayoutsConvertExactly) {
  struct Case {
    Int4Method method;
    int offset;
    bool symmetric;
  };
  const std::int64_t k = 128, group = 32, groups = k / group, ns[] = {16, 8};
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> code(0, 15), zero(1, 16);
  for (const Case c : {Case{Int4Method::kGptq, 1, false}, Case{Int4Method::kGptq, 0, false},
                       Case{Int4Method::kAwq, 0, false}, Case{Int4Method::kGptq, 1, true}}) {
    SCOPED_TRACE(::testing::Message() << (c.method == Int4Method::kGptq ? "GPTQ" : "AWQ")
                                      << " offset " << c.offset << " sym " << c.symmetric);
    Int4Quantization q{c.method, static_cast<int>(group), c.offset};
    std::vector<PackedInt4> packed;
    std::vector<Int4Linear> parts;
    Vec expected;
    for (const std::int64_t n : ns) {
      std::vector<int> codes(n * k), zeros(groups * n);
      std::vector<float> scales(groups * n);
      for (int& v : codes) v = code(rng);
      // AWQ and GPTQ v2 store 0..15; v1 stores z − 1, so its zero points are 1..16.
      for (int& z : zeros) z = c.symmetric ? 8 : zero(rng) - (c.offset == 0 ? 1 : 0);
      for (float& s : scales) s = static_cast<float>(code(rng) + 1) / 1024;  // float16-exact
      packed.push_back(pack_int4(c.method, c.offset, codes, zeros, scales, n, k, group));
      parts.push_back(packed.back().linear("part" + std::to_string(parts.size()), n));
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t g = j / group;
          expected.push_back(double{scales[g * n + i]} * (codes[i * k + j] - zeros[g * n + i]));
        }
      }
    }
    const TensorStorage buffer = convert_int4(q, parts, k);
    ASSERT_TRUE(is_quantized(buffer));
    EXPECT_EQ(static_cast<const unsigned char*>(buffer.data())[7], c.symmetric ? 1 : 0);
    EXPECT_EQ(dequantized(buffer), expected);
  }
}

// A whole GPTQ checkpoint (projections as qweight/qzeros/scales/g_idx, the rest float) loads
// into quantized slots, q/k/v and gate/up stacked, and the model matches the float64 model of
// what it loaded.
TEST(LlamaInt4Checkpoint, AGptqCheckpointLoadsAndRuns) {
  const Config config = tiny_config(DataType::kFloat32, true);
  const Weights floats = synthetic_weights(config, 4);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : checkpoint_tensors(config, floats)) {
    if (name.find("_proj.weight") == std::string::npos) tensors.emplace_back(name, t);
  }
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> code(0, 15), zero(1, 16);
  std::vector<PackedInt4> packed;
  const std::int64_t q = config.q_size(), kv = config.kv_size(), h = config.hidden;
  const std::int64_t inter = config.intermediate;
  for (std::int64_t l = 0; l < config.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const auto& [name, n, k] :
         {std::tuple{"self_attn.q_proj", q, h}, std::tuple{"self_attn.k_proj", kv, h},
          std::tuple{"self_attn.v_proj", kv, h}, std::tuple{"self_attn.o_proj", h, q},
          std::tuple{"mlp.gate_proj", inter, h}, std::tuple{"mlp.up_proj", inter, h},
          std::tuple{"mlp.down_proj", h, inter}}) {
      std::vector<int> codes(n * k), zeros(k / 32 * n);
      std::vector<float> scales(k / 32 * n, static_cast<float>(0.25 / std::sqrt(k)));
      for (int& c : codes) c = code(rng);
      for (int& z : zeros) z = zero(rng) / 2 + 4;  // around the middle, as GPTQ's are
      packed.push_back(pack_int4(Int4Method::kGptq, 1, codes, zeros, scales, n, k, 32));
      const std::string base = p + name;
      tensors.emplace_back(base + ".qweight", packed.back().qweight);
      tensors.emplace_back(base + ".qzeros", packed.back().qzeros);
      tensors.emplace_back(base + ".scales", packed.back().scales);
      tensors.emplace_back(base + ".g_idx", packed.back().g_idx);
    }
  }
  const auto path = temp_path("gptq.safetensors");
  write_safetensors(path, tensors);
  const Int4Quantization gptq{Int4Method::kGptq, 32, 1};
  Weights loaded = load_safetensors_weights(config, path, gptq);
  ASSERT_TRUE(is_quantized(loaded.layers[0].qkv));
  ASSERT_TRUE(is_quantized(loaded.layers[1].down));
  EXPECT_FALSE(is_quantized(loaded.lm_head));
  EXPECT_EQ(dequantized(loaded.layers[1].gate_up).size(), static_cast<std::size_t>(2 * inter * h));
  const Weights again = load_safetensors_weights(config, path, gptq);
  std::filesystem::remove(path);
  check_against_reference(config, again, Model(config, std::move(loaded), 3, 40), 2e-5);
}

TEST(LlamaInt4Checkpoint, ActOrderBadShapesAndConfigsAreRefusedByName) {
  const std::int64_t n = 8, k = 64;
  const std::vector<int> codes(n * k, 3), zeros(2 * n, 8);
  const std::vector<float> scales(2 * n, 0.5f);
  PackedInt4 p = pack_int4(Int4Method::kGptq, 1, codes, zeros, scales, n, k, 32);
  const Int4Quantization gptq{Int4Method::kGptq, 32, 1};
  std::swap(p.g_idx.view().data_as<std::int32_t>()[0], p.g_idx.view().data_as<std::int32_t>()[40]);
  expect_error([&] { (void)convert_int4(gptq, {p.linear("layer.q_proj", n)}, k); },
               "layer.q_proj.g_idx: act-order");
  p.g_idx = TensorStorage();  // no g_idx: groups in K order
  EXPECT_EQ(dequantized(convert_int4(gptq, {p.linear("layer.q_proj", n)}, k)),
            Vec(n * k, 0.5 * (3 - 8)));
  expect_error([&] { (void)convert_int4(gptq, {p.linear("layer.q_proj", 16)}, k); },
               "layer.q_proj.qweight");
  const Int4Quantization awq{Int4Method::kAwq, 32, 0};
  expect_error([&] { (void)convert_int4(awq, {p.linear("layer.o_proj", n)}, k); },
               "layer.o_proj.qweight");
  const auto config = [](const std::string& q) {
    return parse_quantization_config(R"({"hidden_size": 8, "quantization_config": )" + q + "}",
                                     "config.json");
  };
  EXPECT_FALSE(parse_quantization_config(R"({"hidden_size": 8})", "config.json"));
  const auto g = config(R"({"quant_method": "gptq", "bits": 4, "group_size": 64,
      "desc_act": false, "sym": true, "checkpoint_format": "gptq_v2"})");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->method, Int4Method::kGptq);
  EXPECT_EQ(g->group_size, 64);
  EXPECT_EQ(g->zero_offset, 0);
  const auto a = config(R"({"quant_method": "awq", "w_bit": 4, "q_group_size": 128,
      "version": "GEMM", "zero_point": true})");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->method, Int4Method::kAwq);
  EXPECT_EQ(a->group_size, 128);
  expect_error([&] { config(R"({"quant_method": "gptq", "bits": 8, "group_size": 128})"); },
               "quantization_config.bits");
  expect_error([&] { config(R"({"quant_method": "gptq", "bits": 4, "group_size": -1})"); },
               "quantization_config.group_size");
  expect_error(
      [&] {
        config(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
      "version": "gemv"})");
      },
      "quantization_config.version");
  expect_error([&] { config(R"({"quant_method": "bitsandbytes"})"); },
               "quantization_config.quant_method");
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

// warm_up leaves no sequence behind (decode is refused until a prefill) and changes no result:
// the same prompts give the same logits and tokens with and without it.
TEST(LlamaModel, WarmUpForgetsItsToken) {
  const Config config = tiny_config(DataType::kFloat32, false);
  const std::vector<std::vector<std::int64_t>> prompts{{3, 1, 4}, {1, 5}};
  Model cold(config, synthetic_weights(config, 5), 2, 16);
  const Generation expected = generate(cold, prompts, 5, Sampling{1, 1.0, 0});
  Model warm(config, synthetic_weights(config, 5), 2, 16);
  warm.warm_up();
  EXPECT_EQ(warm.batch(), 0);
  const std::vector<std::int64_t> one{1};
  expect_error([&] { warm.decode(one); }, "tokens");
  EXPECT_TRUE(warm.profile().entries().empty());
  const Generation got = generate(warm, prompts, 5, Sampling{1, 1.0, 0});
  EXPECT_EQ(got.tokens, expected.tokens);
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
