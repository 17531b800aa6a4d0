#include "examples/llama/demo.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include <unistd.h>

#include "examples/llama/model.h"
#include "examples/llama/safetensors.h"
#include "examples/llama/step_hooks.h"
#include "examples/llama/tensor_parallel.h"
#include "examples/llama/text_generation.h"
#include "examples/llama/weights.h"
#include "tileops/core/error.h"
#include "tileops/ops/packed_linear.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::llama {
namespace {

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
                                   const std::optional<Int4Quantization>& quantization, Shard shard,
                                   bool print) {
  const bool terminal = print && isatty(STDERR_FILENO) == 1;
  const auto start = std::chrono::steady_clock::now();
  const auto progress = [&](std::int64_t done, std::int64_t total) {
    if (terminal) {
      std::fprintf(stderr, "\rtileops demo: loading %s: layer %lld of %lld", path.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total));
      std::fflush(stderr);
    }
  };
  Weights weights = load_safetensors_weights(config, path, quantization, progress, shard);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!print) return weights;
  std::fprintf(stderr, "%stileops demo: loaded %s (%lld layers, %.1f MiB) in %.2f s\n",
               terminal ? "\r" : "", path.c_str(), static_cast<long long>(config.layers),
               static_cast<double>(weight_bytes(weights)) / (1 << 20), seconds);
  return weights;
}

// A run's inputs and model, built by prepare_run.
struct PreparedRun {
  DemoOptions options;  // --prompt sets prompts and prompt_tokens
  Config config;        // with max_positions covering the context
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<std::int64_t> prompt_ids;
  std::int64_t context = 0;
  std::unique_ptr<Model> model;
};

// Everything up to the built model; each tensor parallel rank runs it alone (and prints only
// when `print`), the ranks agree on the outcome afterwards.
PreparedRun prepare_run(const DemoOptions& given, Communicator* comm, bool print) {
  PreparedRun run;
  run.options = given;
  DemoOptions& options = run.options;
  const Shard shard = comm != nullptr ? Shard{comm->rank(), comm->size()} : Shard{};
  std::unique_ptr<Tokenizer>& tokenizer = run.tokenizer;
  std::vector<std::int64_t>& prompt_ids = run.prompt_ids;
  // Text mode: the tokenizer is read first, and the prompt's length is the prompt size.
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
  if (shard.split() && !options.export_dir.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: --export writes the whole model; run it without --tp");
  }
  if (options.prompt && !options.parallel.dump_logits.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: --dump-logits records token-id runs; it cannot be combined with "
                "--prompt");
  }
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
  if (print && !options.weights.empty() && options.sizes_given) {
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
  // This rank's sizes (checked: the ones --tp must divide). Its memory check counts the whole
  // embedding and lm_head: an upper bound, as the lm_head is the rank's rows only.
  const Config local = shard.split() ? shard_config(config, shard) : config;
  if (tokenizer && tokenizer->vocab_size() > config.vocab) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: the " + tokenizer->describe() + " tokenizer has " +
                    std::to_string(tokenizer->vocab_size()) +
                    " tokens but the model's vocab_size is " + std::to_string(config.vocab));
  }
  const std::int64_t context = options.prompt_tokens + options.new_tokens;
  config.max_positions = std::max(config.max_positions, context);
  Config mine = local;
  mine.max_positions = config.max_positions;
  // Every size is checked before anything is allocated.
  check_memory(mine, cache_geometry(mine, options.prompts, context, options.block_size),
               options.prompts * options.prompt_tokens);
  const std::filesystem::path export_dir = options.export_dir;
  if (!export_dir.empty()) create_export_dir(export_dir);
  Weights weights;
  std::string source = "synthetic weights (seed " + std::to_string(options.sampling.seed) + ")";
  if (!options.weights.empty()) {
    weights =
        load_weights_with_progress(config, options.weights, checkpoint_quantization, shard, print);
    source = "weights from " + options.weights;
    if (checkpoint_quantization) {
      source += checkpoint_quantization->method == Int4Method::kGptq ? " (GPTQ" : " (AWQ";
      source += " int4, group " + std::to_string(checkpoint_quantization->group_size) + ")";
    }
  } else {
    weights = synthetic_weights(config, options.sampling.seed, shard);
  }
  if (options.parallel.hang_load_rank == shard.rank) {
    std::this_thread::sleep_for(
        std::chrono::duration<double>(4 * options.parallel.load_timeout_seconds));
  }
  if (options.parallel.fail_load_rank == shard.rank) {
    throw Error(ErrorKind::kInvalidArgument, "test hook --tp-test-fail-load: rank " +
                                                 std::to_string(shard.rank) +
                                                 " fails while loading");
  }
  if (quant.bits != 0) {
    const std::int64_t before = weight_bytes(weights);
    quantize_weights(weights, quant);
    const double mib = 1 << 20;
    const std::string grouping =
        quant.group() == 0 ? " per channel" : " in groups of " + std::to_string(quant.group());
    if (print) {
      std::fprintf(stderr,
                   "tileops demo: projections quantized to int%d%s, lm_head int8 per channel: "
                   "weights %.1f MiB before, %.1f MiB after\n",
                   quant.bits, grouping.c_str(), static_cast<double>(before) / mib,
                   static_cast<double>(weight_bytes(weights)) / mib);
    }
    source += ", projections int" + std::to_string(quant.bits) + grouping + " for linear_quantized";
  } else if (checkpoint_quantization) {
    source += ", int4 projections for linear_quantized";
  } else {
    source += !options.pack_weights ? ", [N, K] for linear"
              : ops::linear_packing_pays(config.dtype)
                  ? ", packed for linear_packed"
                  : ", [N, K] for linear (packing does not pay on this CPU: AMX)";
  }
  if (shard.split()) {
    source += "; tensor parallel over " + std::to_string(shard.size) + " ranks";
  }
  if (print) {
    std::fprintf(
        report, "decoder: %s\n         %s; %lld prompts of %lld tokens, %lld new tokens each\n",
        config.describe().c_str(), source.c_str(), static_cast<long long>(options.prompts),
        static_cast<long long>(options.prompt_tokens), static_cast<long long>(options.new_tokens));
  }
  if (!export_dir.empty()) {
    write_safetensors(export_dir / "model.safetensors", checkpoint_tensors(config, weights));
    write_config_json(export_dir / "config.json", config);
  }
  run.model = std::make_unique<Model>(config, std::move(weights), options.prompts, context,
                                      options.block_size, options.pack_weights, comm);
  run.config = config;
  run.context = context;
  return run;
}

}  // namespace

std::string one_line(std::string_view message) {
  std::string line(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return line;
}

int run_decoder_demo(const DemoOptions& given, Communicator* comm) {
  const std::int64_t ranks = comm != nullptr ? comm->size() : 1;
  if (given.parallel.ranks != ranks) {
    throw Error(ErrorKind::kInvalidArgument,
                "tileops demo: --tp " + std::to_string(given.parallel.ranks) + " needs " +
                    std::to_string(given.parallel.ranks) +
                    " MPI ranks (mpirun -np N llama_generate --tp N); this run has " +
                    std::to_string(ranks));
  }
  const bool print = comm == nullptr || comm->rank() == 0;
  PreparedRun run;
  if (ranks == 1) {
    run = prepare_run(given, comm, print);
  } else {
    std::string error;  // every rank loads its shard, then they agree on the outcome
    try {
      run = prepare_run(given, comm, print);
    } catch (const std::bad_alloc&) {
      error = "out of memory";
    } catch (const std::exception& e) {
      error = one_line(e.what());
    }
    comm->agree(error, "to load", given.parallel.load_timeout_seconds);
  }
  const DemoOptions& options = run.options;
  Model& model = *run.model;
  model.warm_up();  // after every rank has loaded: it runs the collectives of a split model
  const Config& config = run.config;
  const std::unique_ptr<Tokenizer>& tokenizer = run.tokenizer;
  const std::filesystem::path export_dir = options.export_dir;
  std::FILE* report = options.prompt ? stderr : stdout;
  std::vector<std::vector<std::int64_t>> prompts(options.prompts);
  Generation g;
  std::optional<StepHooks> hooks;
  if (tokenizer && options.prompt) {  // a tokenizer is loaded for --prompt only
    prompts[0] = run.prompt_ids;
    // Every rank decodes the same tokens; rank 0 prints them.
    const auto close = [](std::FILE* f) { std::fclose(f); };
    std::unique_ptr<std::FILE, decltype(close)> sink(print ? nullptr : std::fopen("/dev/null", "w"),
                                                     close);
    std::FILE* text = print ? stdout : sink.get();
    if (text == nullptr) throw Error(ErrorKind::kInvalidArgument, "tileops demo: no /dev/null");
    write_text(text, *options.prompt);
    g = generate_text(model, *tokenizer, run.prompt_ids, options.new_tokens, options.sampling,
                      text);
    write_text(text, "\n");
  } else {
    std::mt19937_64 rng(options.sampling.seed);
    std::uniform_int_distribution<std::int64_t> token(0, config.vocab - 1);
    for (auto& p : prompts) {
      p.resize(options.prompt_tokens);
      for (auto& t : p) t = token(rng);
    }
    hooks.emplace(options.parallel, comm);
    g = generate(model, prompts, options.new_tokens, options.sampling, hooks->on_tokens(),
                 hooks->on_logits());
    hooks->finish();
  }
  if (!print) return 0;  // rank 0 reports
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
  if (hooks) {
    const std::string line =
        hooks->report(g.prefill_seconds, g.decode_seconds, g.decode_tokens / options.prompts);
    std::fputs(line.c_str(), report);
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
