// The decoder options of `tileops demo` and llama_generate (demo.h), and llama_generate's own
// (--tp, --tp-timeout, --dump-logits: tp_options.h).
#include <cstdint>
#include <string>
#include <vector>

#include "examples/llama/demo.h"
#include "examples/llama/tp_options.h"
#include "tileops/core/error.h"

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

// A number > 0 (NaN refused); `expected` says what the option takes.
double parse_positive(const std::string& name, const std::string& value,
                      const std::string& expected) {
  try {
    std::size_t used = 0;
    const double x = std::stod(value, &used);
    if (used == value.size() && x > 0) return x;
  } catch (const std::exception&) {  // not a number, or out of range
    refuse(name, value, expected);
  }
  refuse(name, value, expected);
}

}  // namespace

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
      o.sampling.top_p = parse_positive(name, value, "a number > 0 (>= 1: no top-p filter)");
    } else {
      o.sampling.seed = static_cast<std::uint64_t>(parse_count(name, value));
    }
  }
  return rest;
}

const char* tensor_parallel_options_help() {
  return "  tensor parallelism (mpirun -np N llama_generate --tp N ...; README):\n"
         "           --tp N (ranks; N must divide the heads and the intermediate size, and\n"
         "           divide the kv heads or be a multiple of them)\n"
         "           --tp-timeout SECONDS (longest wait in a collective, default 60)\n"
         "           --tp-load-timeout SECONDS (longest wait for the slowest rank to load\n"
         "           its shard, default 600)\n"
         "           --dump-logits FILE (rank 0 writes each step's logits, float32)\n";
}

std::vector<std::string> parse_tensor_parallel_options(const std::vector<std::string>& args,
                                                       TensorParallelOptions& o) {
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& name = args[i];
    std::int64_t* count = name == "--tp"                  ? &o.ranks
                          : name == "--tp-test-fail-load" ? &o.fail_load_rank
                          : name == "--tp-test-hang-load" ? &o.hang_load_rank
                          : name == "--tp-test-exit-rank" ? &o.exit_rank
                          : name == "--tp-test-hang-rank" ? &o.hang_rank
                          : name == "--tp-test-exit-step" ? &o.exit_step
                                                          : nullptr;
    if (count == nullptr && name != "--tp-timeout" && name != "--tp-load-timeout" &&
        name != "--dump-logits") {
      rest.push_back(name);
      continue;
    }
    if (i + 1 == args.size()) {
      throw Error(ErrorKind::kInvalidArgument, "llama_generate: option " + name + " needs a value");
    }
    const std::string& value = args[++i];
    if (count != nullptr) {
      *count = parse_count(name, value);
      if (count == &o.ranks && (o.ranks < 1 || o.ranks > 0x7fffffff)) {
        refuse(name, value, "a number of ranks >= 1");
      }
    } else if (name == "--tp-timeout" || name == "--tp-load-timeout") {
      // At most a day: the deadline is a time_point, which an infinity would overflow.
      double& seconds = name == "--tp-timeout" ? o.timeout_seconds : o.load_timeout_seconds;
      seconds = parse_positive(name, value, "seconds in (0, 86400]");
      if (seconds > 86400) refuse(name, value, "seconds in (0, 86400]");
    } else {
      o.dump_logits = value;
    }
  }
  return rest;
}

}  // namespace tileops::llama
