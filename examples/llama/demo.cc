#include "examples/llama/demo.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <utility>

#include <unistd.h>

#include "examples/llama/model.h"
#include "examples/llama/safetensors.h"
#include "examples/llama/text_generation.h"
#include "examples/llama/weights.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::llama {
namespace {

[[noreturn]] void refuse(const std::string& name, const std::string& value,
                         const std::string& expected) {
  throw_argument_error(ErrorKind::kInvalidArgument, "tileops demo", name, expected,
                       "'" + value + "'");
}

std::int64_t parse_count(const std::string& name, const std::string& value) {
  static const std::string kExpected = "a non-negative integer";
  try {
    std::size_t used = 0;
    const long long n = std::stoll(value, &used);
    if (used == value.size() && n >= 0) return n;
  } catch (const std::exception&) {  // not a number, or out of range
    refuse(name, value, kExpected);
  }
  refuse(name, value, kExpected);
}

// A number > 0 (NaN refused); the only real option is --top-p, where >= 1 turns the filter off.
double parse_positive(const std::string& name, const std::string& value) {
  static const std::string kExpected = "a number > 0 (>= 1: no top-p filter)";
  try {
    std::size_t used = 0;
    const double x = std::stod(value, &used);
    if (used == value.size() && x > 0) return x;
  } catch (const std::exception&) {  // not a number, or out of range
    refuse(name, value, kExpected);
  }
  refuse(name, value, kExpected);
}

// Physical memory in bytes (0 when unknown).
double memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

// Refuses a run whose weights, KV cache and prefill activations would not fit in this
// machine's memory (they would fail to allocate, or run it out of memory while filling them).
void check_memory(const Config& config, const CacheGeometry& cache, std::int64_t prompt_tokens) {
  const double gib = 1 << 30, element = static_cast<double>(size_of(config.dtype));
  const double weights = config.parameters() * element;
  // Per prefill token: residual, hidden, normed, attention, qkv, gate_up and act rows, and the
  // token's id, position and slot (int64) and its entry in the prompts.
  const double per_token =
      (4.0 * static_cast<double>(config.hidden) + static_cast<double>(config.qkv_size()) +
       3.0 * static_cast<double>(config.intermediate)) *
          element +
      32;
  const double other = per_token * static_cast<double>(prompt_tokens);
  const double total = weights + static_cast<double>(cache.bytes) + other;
  const double memory = memory_bytes();
  if (memory > 0 && total > memory) {
    char text[240];
    std::snprintf(text, sizeof(text),
                  "tileops demo: the model's weights (%.3g GiB), KV cache (%.3g GiB) and "
                  "activations (%.3g GiB) need more than this machine's %.3g GiB of memory",
                  weights / gib, static_cast<double>(cache.bytes) / gib, other / gib, memory / gib);
    throw Error(ErrorKind::kInvalidArgument, text);
  }
}

// Creates the export directory, or says which option named a path it cannot use.
void create_export_dir(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir, error)) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: --export " + dir.string() + ": cannot create the directory (" +
                    (error ? error.message() : "not a directory") + ")");
  }
}

// config.json next to the weights (or inside their directory), when there is one.
std::filesystem::path config_beside(const std::filesystem::path& weights) {
  const auto dir = std::filesystem::is_directory(weights) ? weights : weights.parent_path();
  return dir / "config.json";
}

void write_text(std::FILE* out, std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) {
    throw Error(ErrorKind::kInvalidArgument, "tileops demo: cannot write to stdout");
  }
}

// Loads the checkpoint; stderr shows the layers loaded so far on a terminal (one line, redrawn)
// and, on any stderr, how long the loading took.
Weights load_weights_with_progress(const Config& config, const std::string& path,
                                   const std::optional<Int4Quantization>& quantization) {
  const bool terminal = isatty(STDERR_FILENO) == 1;
  const auto start = std::chrono::steady_clock::now();
  const auto progress = [&](std::int64_t done, std::int64_t total) {
    if (terminal) {
      std::fprintf(stderr, "\rtileops demo: loading %s: layer %lld of %lld", path.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total));
      std::fflush(stderr);
    }
  };
  Weights weights = load_safetensors_weights(config, path, quantization, progress);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "%stileops demo: loaded %s (%lld layers, %.1f MiB) in %.2f s\n",
               terminal ? "\r" : "", path.c_str(), static_cast<long long>(config.layers),
               static_cast<double>(weight_bytes(weights)) / (1 << 20), seconds);
  return weights;
}

}  // namespace

std::string one_line(std::string_view message) {
  std::string line(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

const char* demo_options_help() {
  return "  decoder: --layers N --hidden N --heads N --kv-heads N --head-size N\n"
         "           --intermediate N --vocab N --dtype f32|f16|bf16 --weights PATH\n"
         "           --prompts N --prompt-tokens N --new-tokens N --block-size N\n"
         "           --top-k N --top-p X --seed N\n"
         "           --prompt TEXT (with --weights DIR: encode TEXT with DIR's tokenizer.model\n"
         "           or tokenizer.json and print the generated text as it comes)\n"
         "           --no-pack (linear over the [N, K] weights instead of their packed form)\n"
         "           --quantize int8|int4 (projections quantized at load: int8 per channel,\n"
         "           int4 symmetric in groups; the lm_head int8) --quant-group 32|64|128\n";
}

std::vector<std::string> parse_demo_options(const std::vector<std::string>& args, DemoOptions& o) {
  std::vector<std::string> rest;
  Config& c = o.config;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& name = args[i];
    if (name == "--no-pack") {
      o.pack_weights = false;
      continue;
    }
    std::int64_t* count = name == "--layers"          ? &c.layers
                          : name == "--hidden"        ? &c.hidden
                          : name == "--heads"         ? &c.heads
                          : name == "--kv-heads"      ? &c.kv_heads
                          : name == "--head-size"     ? &c.head_size
                          : name == "--intermediate"  ? &c.intermediate
                          : name == "--vocab"         ? &c.vocab
                          : name == "--prompts"       ? &o.prompts
                          : name == "--prompt-tokens" ? &o.prompt_tokens
                          : name == "--new-tokens"    ? &o.new_tokens
                          : name == "--block-size"    ? &o.block_size
                          : name == "--top-k"         ? &o.sampling.top_k
                                                      : nullptr;
    const bool known = count != nullptr || name == "--dtype" || name == "--weights" ||
                       name == "--top-p" || name == "--seed" || name == "--export" ||
                       name == "--quantize" || name == "--quant-group" || name == "--prompt";
    if (!known) {
      rest.push_back(name);
      continue;
    }
    if (i + 1 == args.size()) {
      throw Error(ErrorKind::kInvalidArgument, "tileops demo: option " + name + " needs a value");
    }
    const std::string& value = args[++i];
    if (count != nullptr) {
      *count = parse_count(name, value);
      if (count == &c.layers || count == &c.hidden || count == &c.heads || count == &c.kv_heads ||
          count == &c.head_size || count == &c.intermediate || count == &c.vocab) {
        o.sizes_given = true;
      }
    } else if (name == "--dtype") {
      const auto dtype = parse_data_type(value);
      if (!dtype) {
        throw_argument_error(ErrorKind::kInvalidArgument, "tileops demo", name, "f32, f16 or bf16",
                             "'" + value + "'");
      }
      c.dtype = *dtype;
    } else if (name == "--weights") {
      o.weights = value;
    } else if (name == "--prompt") {
      o.prompt = value;
    } else if (name == "--export") {
      o.export_dir = value;
    } else if (name == "--quantize") {
      if (value != "int8" && value != "int4") {
        throw_argument_error(ErrorKind::kInvalidArgument, "tileops demo", name, "int8 or int4",
                             "'" + value + "'");
      }
      o.quantization.bits = value == "int8" ? 8 : 4;
    } else if (name == "--quant-group") {
      const std::int64_t g = parse_count(name, value);
      if (g != 0 && g != 32 && g != 64 && g != 128) {
        throw_argument_error(ErrorKind::kInvalidArgument, "tileops demo", name,
                             "32, 64 or 128 (or 0: per channel, int8 only)", "'" + value + "'");
      }
      o.quantization.group_size = static_cast<int>(g);
    } else if (name == "--top-p") {
      o.sampling.top_p = parse_positive(name, value);
    } else {
      o.sampling.seed = static_cast<std::uint64_t>(parse_count(name, value));
    }
  }
  return rest;
}

int run_decoder_demo(const DemoOptions& given) {
  DemoOptions options = given;
  // Text mode: the tokenizer is read first, and the prompt's length is the prompt size.
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<std::int64_t> prompt_ids;
  if (options.prompt) {
    if (options.weights.empty()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "tileops demo: --prompt needs --weights DIR (a checkpoint with its tokenizer)");
    }
    tokenizer = load_tokenizer(options.weights);
    prompt_ids = encode_prompt(*tokenizer, *options.prompt);
    options.prompts = 1;
    options.prompt_tokens = static_cast<std::int64_t>(prompt_ids.size());
  }
  std::FILE* report = options.prompt ? stderr : stdout;
  constexpr std::int64_t kMaxTokens = std::int64_t{1} << 30;
  for (const auto& [name, value] : {std::pair{"--prompts", options.prompts},
                                    std::pair{"--prompt-tokens", options.prompt_tokens},
                                    std::pair{"--new-tokens", options.new_tokens},
                                    std::pair{"--block-size", options.block_size}}) {
    if (value < 1 || value > kMaxTokens) {
      throw_argument_error(ErrorKind::kInvalidArgument, "tileops demo", name,
                           "a count in [1, " + std::to_string(kMaxTokens) + "]",
                           std::to_string(value));
    }
  }
  if (options.prompt_tokens + options.new_tokens > kMaxPositions) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: --prompt-tokens + --new-tokens must be at most " +
                    std::to_string(kMaxPositions) + "; got " +
                    std::to_string(options.prompt_tokens + options.new_tokens));
  }
  const WeightQuantization& quant = options.quantization;
  if (quant.bits == 0 && quant.group_size >= 0) {
    throw Error(ErrorKind::kInvalidArgument, "tileops demo: --quant-group needs --quantize");
  }
  if (quant.bits == 4 && quant.group() == 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: --quant-group 0 (per channel) is int8 only; int4 takes 32, 64 or "
                "128");
  }
  if (quant.bits != 0 && !options.export_dir.empty()) {
    // generation.json would hold the quantized run's tokens next to the float weights.
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: --export writes the float weights; it cannot be combined with "
                "--quantize");
  }
  Config config = options.config;
  if (!options.weights.empty() && options.sizes_given) {
    std::fprintf(stderr,
                 "tileops demo: the model's sizes come from --weights (and its config.json); "
                 "the size options given are ignored\n");
  }
  std::optional<Int4Quantization> checkpoint_quantization;
  if (!options.weights.empty()) {
    const auto config_path = config_beside(options.weights);
    if (std::filesystem::exists(config_path)) {
      config = read_config_json(config_path, config);
      std::ifstream in(config_path);
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      checkpoint_quantization = parse_quantization_config(text, config_path.string());
    }
  }
  config.validate();
  if (tokenizer && tokenizer->vocab_size() > config.vocab) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: the " + tokenizer->describe() + " tokenizer has " +
                    std::to_string(tokenizer->vocab_size()) +
                    " tokens but the model's vocab_size is " + std::to_string(config.vocab));
  }
  const std::int64_t context = options.prompt_tokens + options.new_tokens;
  config.max_positions = std::max(config.max_positions, context);
  // Every size is checked before anything is allocated.
  check_memory(config, cache_geometry(config, options.prompts, context, options.block_size),
               options.prompts * options.prompt_tokens);
  const std::filesystem::path export_dir = options.export_dir;
  if (!export_dir.empty()) create_export_dir(export_dir);
  Weights weights;
  std::string source = "synthetic weights (seed " + std::to_string(options.sampling.seed) + ")";
  if (!options.weights.empty()) {
    weights = load_weights_with_progress(config, options.weights, checkpoint_quantization);
    source = "weights from " + options.weights;
    if (checkpoint_quantization) {
      source += checkpoint_quantization->method == Int4Method::kGptq ? " (GPTQ" : " (AWQ";
      source += " int4, group " + std::to_string(checkpoint_quantization->group_size) + ")";
    }
  } else {
    weights = synthetic_weights(config, options.sampling.seed);
  }
  if (quant.bits != 0) {
    const std::int64_t before = weight_bytes(weights);
    quantize_weights(weights, quant);
    const double mib = 1 << 20;
    const std::string grouping =
        quant.group() == 0 ? " per channel" : " in groups of " + std::to_string(quant.group());
    std::fprintf(stderr,
                 "tileops demo: projections quantized to int%d%s, lm_head int8 per channel: "
                 "weights %.1f MiB before, %.1f MiB after\n",
                 quant.bits, grouping.c_str(), static_cast<double>(before) / mib,
                 static_cast<double>(weight_bytes(weights)) / mib);
    source += ", projections int" + std::to_string(quant.bits) + grouping + " for linear_quantized";
  } else if (checkpoint_quantization) {
    source += ", int4 projections for linear_quantized";
  } else {
    source += options.pack_weights ? ", packed for linear_packed" : ", [N, K] for linear";
  }
  std::fprintf(
      report, "decoder: %s\n         %s; %lld prompts of %lld tokens, %lld new tokens each\n",
      config.describe().c_str(), source.c_str(), static_cast<long long>(options.prompts),
      static_cast<long long>(options.prompt_tokens), static_cast<long long>(options.new_tokens));
  if (!export_dir.empty()) {
    write_safetensors(export_dir / "model.safetensors", checkpoint_tensors(config, weights));
    write_config_json(export_dir / "config.json", config);
  }
  Model model(config, std::move(weights), options.prompts, context, options.block_size,
              options.pack_weights);

  std::vector<std::vector<std::int64_t>> prompts(options.prompts);
  Generation g;
  if (tokenizer && options.prompt) {  // a tokenizer is loaded for --prompt only
    prompts[0] = prompt_ids;
    write_text(stdout, *options.prompt);
    g = generate_text(model, *tokenizer, prompt_ids, options.new_tokens, options.sampling, stdout);
    write_text(stdout, "\n");
  } else {
    std::mt19937_64 rng(options.sampling.seed);
    std::uniform_int_distribution<std::int64_t> token(0, config.vocab - 1);
    for (auto& p : prompts) {
      p.resize(options.prompt_tokens);
      for (auto& t : p) t = token(rng);
    }
    g = generate(model, prompts, options.new_tokens, options.sampling);
  }
  if (!export_dir.empty()) {
    const nlohmann::json record = {
        {"prompts", prompts},
        {"tokens", g.tokens},
        {"prefill_tokens", g.prefill_tokens},
        {"prefill_seconds", g.prefill_seconds},
        {"decode_tokens", g.decode_tokens},
        {"decode_seconds", g.decode_seconds},
        {"threads", ThreadPool::global().num_threads()},
        {"top_k", options.sampling.top_k},
        {"top_p", options.sampling.top_p},
    };
    std::ofstream out(export_dir / "generation.json");
    out << record.dump() << "\n";
    if (!out) {
      throw Error(ErrorKind::kInvalidArgument,
                  "tileops demo: cannot write " + (export_dir / "generation.json").string());
    }
  }

  std::fprintf(report, "prefill: %lld tokens in %.3f s = %.1f tokens/s\n",
               static_cast<long long>(g.prefill_tokens), g.prefill_seconds,
               static_cast<double>(g.prefill_tokens) / g.prefill_seconds);
  if (g.decode_tokens > 0) {
    std::fprintf(report,
                 "decode:  %lld tokens in %.3f s = %.1f tokens/s (%.2f ms per step of %lld)\n",
                 static_cast<long long>(g.decode_tokens), g.decode_seconds,
                 static_cast<double>(g.decode_tokens) / g.decode_seconds,
                 1e3 * g.decode_seconds * static_cast<double>(options.prompts) /
                     static_cast<double>(g.decode_tokens),
                 static_cast<long long>(options.prompts));
  }
  if (tokenizer) return 0;  // the text is the output; the operator table is the demo's
  auto entries = model.profile().entries();
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  const double total = model.profile().total();
  std::printf("time per operator (prefill + decode, %d threads):\n",
              ThreadPool::global().num_threads());
  for (const auto& [op, seconds] : entries) {
    std::printf("  %-20s %8.3f s %6.1f %%\n", op.c_str(), seconds, 100 * seconds / total);
  }
  std::printf("first tokens generated for prompt 0:");
  for (std::size_t i = 0; i < std::min<std::size_t>(8, g.tokens[0].size()); ++i) {
    std::printf(" %lld", static_cast<long long>(g.tokens[0][i]));
  }
  std::printf("\n");
  return 0;
}

}  // namespace tileops::llama
