// `tileops demo`: every registered operator on LLM shapes (hidden 4096; 16 and 2048 tokens),
// checked against its float64 reference and timed, then the Llama decoder of examples/llama
// (prefill, decode, time per operator). Fails (exit 1) when any operator result is out of
// tolerance or an operator has no demo case.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "examples/llama/demo.h"
#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/ops.h"
#include "tileops/runtime/thread_pool.h"
#include "tools/cli/commands.h"
#include "tools/cli/demo_case.h"

namespace tileops::cli {
namespace {

namespace ref = testing::reference;
using demo::append_attention_cases;
using demo::append_gemm_cases;
using demo::append_kv_cases;
using demo::bytes_of;
using demo::Case;
using demo::declared_case;
using demo::empty;
using demo::random;
using demo::Storage;
using demo::values;

std::vector<Case> make_cases(std::int64_t tokens, DataType dt, std::mt19937_64& rng) {
  constexpr std::int64_t kHidden = 4096;
  constexpr std::int64_t kIntermediate = 11008;
  constexpr std::int64_t kVocab = 8192;
  constexpr std::int64_t kHeads = 8;
  const std::string tk = std::to_string(tokens);
  std::vector<Case> cases;
  const Dims hs{tokens, kHidden};

  for (const char* name : {"add", "mul"}) {
    const bool is_add = std::strcmp(name, "add") == 0;
    auto a = random(hs, dt, rng), b = random(hs, dt, rng);
    cases.push_back(declared_case(name, "[" + tk + ", 4096]", dt, {a, b, nullptr}, {}, -1, [=] {
      return ref::broadcast_binary(
          values(a), hs, values(b), hs, hs,
          is_add ? +[](double x, double y) { return x + y; }
                 : +[](double x, double y) { return x * y; });
    }));
  }
  {
    const DataType to = dt == DataType::kFloat32 ? DataType::kBFloat16 : DataType::kFloat32;
    auto a = random(hs, dt, rng), out = empty(hs, to);
    cases.push_back(declared_case("cast", "[" + tk + ", 4096] to " + std::string(name_of(to)), dt,
                                  {a, out}, {}, -1, [=] {
                                    // The source value rounded once to the target.
                                    auto expected = empty(hs, to);
                                    testing::from_doubles(expected->view(), values(a));
                                    return values(expected);
                                  }));
  }
  {
    const Dims half{tokens, kHidden / 2};
    auto a = random(half, dt, rng), b = random(half, dt, rng), out = empty(hs, dt);
    cases.push_back({"cat", "2 x [" + tk + ", 2048] dim -1", dt, bytes_of({a, b, out}),
                     [=] {
                       const Tensor parts[] = {*a, *b};
                       ops::cat(parts, -1, *out);
                     },
                     [=] { return out; },
                     [=] {
                       const auto va = values(a), vb = values(b);
                       ref::Values v;
                       for (std::int64_t r = 0; r < tokens; ++r) {
                         v.insert(v.end(), va.begin() + r * 2048, va.begin() + (r + 1) * 2048);
                         v.insert(v.end(), vb.begin() + r * 2048, vb.begin() + (r + 1) * 2048);
                       }
                       return v;
                     }});
  }
  {
    auto ids = random({tokens}, DataType::kInt64, rng, 0, kVocab);
    auto w = random({kVocab, kHidden}, dt, rng), out = empty(hs, dt);
    // Bytes: the ids, the rows they read and out.
    cases.push_back(declared_case("embedding", "[" + tk + "] of [8192, 4096]", dt, {ids, w, out},
                                  {}, bytes_of({ids, out, out}),
                                  [=] { return ref::embedding(values(ids), values(w), kHidden); }));
  }
  {
    auto x = random(hs, dt, rng), w = random({kHidden}, dt, rng);
    cases.push_back(declared_case("rms_norm", "[" + tk + ", 4096]", dt, {x, w, nullptr}, {1e-6},
                                  2.0 * static_cast<double>(x->bytes()), [=] {
                                    return ref::rms_norm(values(x), values(w), 1e-6, kHidden);
                                  }));
  }
  {
    auto x = random(hs, dt, rng), res = random(hs, dt, rng), w = random({kHidden}, dt, rng);
    cases.push_back(declared_case(
        "add_rms_norm", "[" + tk + ", 4096]", dt, {x, res, w, nullptr, nullptr}, {1e-6},
        bytes_of({x, res, x, res}), [=] {
          auto sum = empty(hs, dt);  // residual_out: the sum rounded to dt
          testing::from_doubles(sum->view(), ref::broadcast_binary(
                                                 values(x), hs, values(res), hs, hs,
                                                 +[](double p, double q) { return p + q; }));
          return ref::rms_norm(values(sum), values(w), 1e-6, kHidden);
        }));
  }
  {
    const Dims is{tokens, kIntermediate};
    auto a = random(is, dt, rng), g = random(is, dt, rng);
    cases.push_back(
        declared_case("swiglu", "[" + tk + ", 11008]", dt, {a, g, nullptr}, {}, -1, [=] {
          return ref::broadcast_binary(
              values(a), is, values(g), is, is,
              +[](double x, double y) { return x * ref::silu(y); });
        }));
  }
  {
    auto x = random({tokens, 2 * kIntermediate}, dt, rng);
    cases.push_back(
        declared_case("silu_and_mul", "[" + tk + ", 22016]", dt, {x, nullptr}, {-1}, -1,
                      [=] { return ref::silu_and_mul_last_dim(values(x), 2 * kIntermediate); }));
  }
  {
    const Dims ss{kHeads, tokens, tokens};
    auto x = random(ss, dt, rng, -8, 8);
    const std::string shape = "[8, " + tk + ", " + tk + "]";
    cases.push_back(declared_case("causal_softmax", shape, dt, {x, nullptr}, {}, -1, [=] {
      return ref::softmax_rows(values(x), tokens, 1.0, true, tokens);
    }));
    cases.push_back(
        declared_case("scaled_softmax", shape + " scale 0.125", dt, {x, nullptr}, {0.125}, -1,
                      [=] { return ref::softmax_rows(values(x), tokens, 0.125, false, tokens); }));
  }
  append_kv_cases(cases, tokens, dt, rng);
  append_vllm_cases(cases, tokens, dt, rng);
  append_gemm_cases(cases, tokens, dt, rng);
  append_attention_cases(cases, tokens, dt, rng);
  return cases;
}

// Median seconds per call over enough repetitions to fill ~0.2 s (at least 3).
double time_call(const std::function<void()>& run) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> samples;
  const auto start = Clock::now();
  while (samples.size() < 3 ||
         (samples.size() < 200 && Clock::now() - start < std::chrono::milliseconds(200))) {
    const auto t0 = Clock::now();
    run();
    samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

// Runs every operator case, prints the table and returns the number of failures.
int run_operator_table(bool quick) {
  std::printf("tileops demo: every operator on the CPU (%d threads), checked against float64\n\n",
              ThreadPool::global().num_threads());
  std::printf("%-20s %-34s %-9s %10s %9s %11s %s\n", "operator", "shape", "dtype", "time (us)",
              "GB/s", "max error", "check");
  std::mt19937_64 rng(2024);  // NOLINT(bugprone-random-generator-seed): same data every run
  std::set<std::string> covered;
  int failures = 0;
  std::vector<std::int64_t> token_counts{16};
  if (!quick) token_counts.push_back(2048);
  for (std::int64_t tokens : token_counts) {
    for (DataType dt : {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat16}) {
      for (const Case& c : make_cases(tokens, dt, rng)) {
        covered.insert(c.op);
        c.run();
        const Storage out = c.output();
        const ref::Values expected = c.reference();
        const DataType out_dtype = out->view().dtype();
        const auto tol = c.dot_length > 0 ? testing::dot_tolerance(out_dtype, c.dot_length)
                                          : testing::tolerance_for(out_dtype);
        const bool ok = testing::compare(out->view(), expected, tol).empty();
        const double error = testing::max_abs_error(out->view(), expected);
        const double seconds = time_call(c.run);
        failures += ok ? 0 : 1;
        std::printf("%-20s %-34s %-9s %10.1f %9.2f %11.3g %s\n", c.op.c_str(), c.shape.c_str(),
                    std::string(name_of(c.dtype)).c_str(), seconds * 1e6, c.bytes / seconds * 1e-9,
                    error, ok ? "ok" : "FAIL");
      }
    }
  }
  for (const std::string& op : ops::registered_operators()) {
    if (covered.count(op) == 0) {
      std::printf("%-15s has no demo case\n", op.c_str());
      ++failures;
    }
  }
  std::printf("\n%s\n", failures == 0 ? "all results within tolerance"
                                      : (std::to_string(failures) + " failure(s)").c_str());
  return failures;
}

}  // namespace

int run_demo(int argc, char** argv) {
  llama::DemoOptions decoder;
  bool quick = false, operators = true, model = true;
  for (const std::string& arg : llama::parse_demo_options({argv, argv + argc}, decoder)) {
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--operators-only") {
      model = false;
    } else if (arg == "--decoder-only") {
      operators = false;
    } else {
      std::fprintf(stderr, "tileops demo: unknown option '%s' (try 'tileops help')\n",
                   llama::one_line(arg).c_str());
      return 2;
    }
  }
  if (!operators && !model) {
    std::fprintf(stderr,
                 "tileops demo: --operators-only and --decoder-only exclude each other (give "
                 "neither to run both)\n");
    return 2;
  }
  if (model && !decoder.weights.empty() && !std::filesystem::exists(decoder.weights)) {
    std::fprintf(stderr, "tileops demo: --weights %s: no such file or directory\n",
                 llama::one_line(decoder.weights).c_str());
    return 1;
  }
  if (quick) {  // fewer and shorter prompts
    decoder.prompts = std::min<std::int64_t>(decoder.prompts, 2);
    decoder.prompt_tokens = std::min<std::int64_t>(decoder.prompt_tokens, 32);
    decoder.new_tokens = std::min<std::int64_t>(decoder.new_tokens, 8);
  }
  const int failures = operators ? run_operator_table(quick) : 0;
  if (model) {
    std::printf("\n");
    llama::run_decoder_demo(decoder);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace tileops::cli
