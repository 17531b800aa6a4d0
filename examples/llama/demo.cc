#include "examples/llama/demo.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include <unistd.h>

#include "examples/llama/model.h"
#include "examples/llama/safetensors.h"
#include "examples/llama/weights.h"
#include "tileops/core/error.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::llama {
namespace {

std::int64_t parse_count(const std::string& name, const std::string& value) {
  try {
    std::size_t used = 0;
    const long long n = std::stoll(value, &used);
    if (used == value.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  throw_argument_error(ErrorKind::kInvalidArgument, "tileops demo", name, "a non-negative integer",
                       "'" + value + "'");
}

double parse_real(const std::string& name, const std::string& value) {
  try {
    std::size_t used = 0;
    const double x = std::stod(value, &used);
    if (used == value.size()) return x;
  } catch (const std::exception&) {
  }
  throw_argument_error(ErrorKind::kInvalidArgument, "tileops demo", name, "a number",
                       "'" + value + "'");
}

// config.json next to the weights (or inside their directory), when there is one.
std::filesystem::path config_beside(const std::filesystem::path& weights) {
  const auto dir = std::filesystem::is_directory(weights) ? weights : weights.parent_path();
  return dir / "config.json";
}

}  // namespace

const char* demo_options_help() {
  return "  decoder: --layers N --hidden N --heads N --kv-heads N --head-size N\n"
         "           --intermediate N --vocab N --dtype f32|f16|bf16 --weights PATH\n"
         "           --prompts N --prompt-tokens N --new-tokens N --block-size N\n"
         "           --top-k N --top-p X --seed N\n"
         "           --no-pack (linear over the [N, K] weights instead of their packed form)\n";
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
                       name == "--top-p" || name == "--seed" || name == "--export";
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
    } else if (name == "--export") {
      o.export_dir = value;
    } else if (name == "--top-p") {
      o.sampling.top_p = parse_real(name, value);
    } else {
      o.sampling.seed = static_cast<std::uint64_t>(parse_count(name, value));
    }
  }
  return rest;
}

int run_decoder_demo(const DemoOptions& options) {
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
  Config config = options.config;
  if (!options.weights.empty() && options.sizes_given) {
    std::fprintf(stderr,
                 "tileops demo: the model's sizes come from --weights (and its config.json); "
                 "the size options given are ignored\n");
  }
  Weights weights;
  std::string source = "synthetic weights (seed " + std::to_string(options.sampling.seed) + ")";
  if (!options.weights.empty()) {
    const auto config_path = config_beside(options.weights);
    if (std::filesystem::exists(config_path)) config = read_config_json(config_path, config);
    weights = load_safetensors_weights(config, options.weights);
    source = "weights from " + options.weights;
  } else {
    config.validate();
    const double gib = config.parameters() * static_cast<double>(size_of(config.dtype)) / (1 << 30);
    const double memory_gib = static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
                              static_cast<double>(sysconf(_SC_PAGE_SIZE)) / (1 << 30);
    if (memory_gib > 0 && gib > memory_gib) {
      char text[160];
      std::snprintf(text, sizeof(text),
                    "tileops demo: the model's weights need %.3g GiB, more than this machine's "
                    "%.3g GiB of memory",
                    gib, memory_gib);
      throw Error(ErrorKind::kInvalidArgument, text);
    }
    weights = synthetic_weights(config, options.sampling.seed);
  }
  const std::int64_t context = options.prompt_tokens + options.new_tokens;
  config.max_positions = std::max(config.max_positions, context);
  source += options.pack_weights ? ", packed for linear_packed" : ", [N, K] for linear";
  std::printf("decoder: %s\n         %s; %lld prompts of %lld tokens, %lld new tokens each\n",
              config.describe().c_str(), source.c_str(), static_cast<long long>(options.prompts),
              static_cast<long long>(options.prompt_tokens),
              static_cast<long long>(options.new_tokens));
  const std::filesystem::path export_dir = options.export_dir;
  if (!export_dir.empty()) {
    std::filesystem::create_directories(export_dir);
    write_safetensors(export_dir / "model.safetensors", checkpoint_tensors(config, weights));
    write_config_json(export_dir / "config.json", config);
  }
  Model model(config, std::move(weights), options.prompts, context, options.block_size,
              options.pack_weights);

  std::mt19937_64 rng(options.sampling.seed);
  std::uniform_int_distribution<std::int64_t> token(0, config.vocab - 1);
  std::vector<std::vector<std::int64_t>> prompts(options.prompts);
  for (auto& p : prompts) {
    p.resize(options.prompt_tokens);
    for (auto& t : p) t = token(rng);
  }
  const Generation g = generate(model, prompts, options.new_tokens, options.sampling);
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
    std::ofstream(export_dir / "generation.json") << record.dump() << "\n";
  }

  std::printf("prefill: %lld tokens in %.3f s = %.1f tokens/s\n",
              static_cast<long long>(g.prefill_tokens), g.prefill_seconds,
              static_cast<double>(g.prefill_tokens) / g.prefill_seconds);
  if (g.decode_tokens > 0) {
    std::printf("decode:  %lld tokens in %.3f s = %.1f tokens/s (%.2f ms per step of %lld)\n",
                static_cast<long long>(g.decode_tokens), g.decode_seconds,
                static_cast<double>(g.decode_tokens) / g.decode_seconds,
                1e3 * g.decode_seconds / static_cast<double>(options.new_tokens - 1),
                static_cast<long long>(options.prompts));
  }
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
