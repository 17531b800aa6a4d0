// `tileops demo` cases of the KV-cache, rotary and sampling operators on Llama-like shapes
// (32 query heads, 8 KV heads, head size 128, 4096 positions, vocabulary 32000). The samplers
// run with k = 1, whose result is checkable (the argmax), and on at most 64 rows; the logit mask
// with k = 50 alone, which a repeated run leaves as the first left it.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

#include "tests/support/rotary_reference.h"
#include "tileops/ops.h"
#include "tools/cli/demo_case.h"

namespace tileops::cli::demo {
namespace {

constexpr std::int64_t kHeads = 32;
constexpr std::int64_t kKvHeads = 8;
constexpr std::int64_t kHeadSize = 128;
constexpr std::int64_t kMaxPos = 4096;
constexpr std::int64_t kVocab = 32000;

testing::reference::Values argmax_rows(const testing::reference::Values& x, std::int64_t width) {
  testing::reference::Values out;
  for (std::size_t r = 0; r * width < x.size(); ++r) {
    const auto row = x.begin() + static_cast<std::int64_t>(r) * width;
    out.push_back(static_cast<double>(std::max_element(row, row + width) - row));
  }
  return out;
}

void append_rotary_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                         std::mt19937_64& rng) {
  const std::string tk = std::to_string(tokens);
  auto positions = random({tokens}, DataType::kInt64, rng, 0, kMaxPos);
  auto cache = std::make_shared<TensorStorage>(
      testing::rotary_cache(kMaxPos, kHeadSize, dt, testing::Layout::kContiguous));
  auto query = random({tokens, kHeads * kHeadSize}, dt, rng);
  auto key = random({tokens, kKvHeads * kHeadSize}, dt, rng);
  auto q_out = empty({tokens, kHeads * kHeadSize}, dt);
  auto k_out = empty({tokens, kKvHeads * kHeadSize}, dt);
  cases.push_back(declared_case("rotary_embedding", "q [" + tk + ", 32x128] k 8 heads neox", dt,
                                {positions, query, key, cache, q_out, k_out}, {kHeadSize, 1, -1},
                                bytes_of({query, key, q_out, k_out}), [=] {
                                  return testing::rotary_reference(query->view(), positions->view(),
                                                                   cache->view(), kHeadSize, true);
                                }));
  // The same rotation from gathered per-frequency tables, GPT-J style.
  auto cos = empty({tokens, kHeadSize / 2}, dt);
  auto sin = empty({tokens, kHeadSize / 2}, dt);
  const auto table = values(cache);
  const auto pos = values(positions);
  testing::reference::Values c, s;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const auto row = table.begin() + static_cast<std::int64_t>(pos[t]) * kHeadSize;
    c.insert(c.end(), row, row + kHeadSize / 2);
    s.insert(s.end(), row + kHeadSize / 2, row + kHeadSize);
  }
  testing::from_doubles(cos->view(), c);
  testing::from_doubles(sin->view(), s);
  cases.push_back(declared_case("apply_rotary_pos_emb", "q [" + tk + ", 32x128] gpt-j", dt,
                                {query, nullptr, cos, sin, nullptr, nullptr}, {kHeadSize, 0}, -1,
                                [=] {
                                  return testing::rotary_reference(query->view(), positions->view(),
                                                                   cache->view(), kHeadSize, false);
                                }));
}

void append_cache_case(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                       std::mt19937_64& rng) {
  // As many slots as tokens, in a shuffled order: every cache row is written.
  constexpr std::int64_t kBlockSize = 16;
  const std::int64_t blocks = (tokens + kBlockSize - 1) / kBlockSize;
  const std::int64_t row = kKvHeads * kHeadSize;
  std::vector<double> slots(static_cast<std::size_t>(tokens));
  std::iota(slots.begin(), slots.end(), 0.0);
  std::shuffle(slots.begin(), slots.end(), rng);
  auto slot_mapping = empty({tokens}, DataType::kInt64);
  testing::from_doubles(slot_mapping->view(), slots);
  auto key = random({tokens, kKvHeads, kHeadSize}, dt, rng);
  auto value = random({tokens, kKvHeads, kHeadSize}, dt, rng);
  auto key_cache = random({blocks, kBlockSize, kKvHeads, kHeadSize}, dt, rng);
  auto value_cache = random({blocks, kBlockSize, kKvHeads, kHeadSize}, dt, rng);
  const auto before = values(key_cache);
  const std::string tk = std::to_string(tokens);
  cases.push_back(
      declared_case("reshape_and_cache", "[" + tk + ", 8, 128] block 16", dt,
                    {key, value, key_cache, value_cache, slot_mapping, nullptr, nullptr}, {},
                    2 * bytes_of({key, value}), [=] {
                      auto expected = before;
                      const auto k = values(key);
                      for (std::size_t t = 0; t < slots.size(); ++t) {
                        std::copy(k.begin() + static_cast<std::int64_t>(t) * row,
                                  k.begin() + static_cast<std::int64_t>(t + 1) * row,
                                  expected.begin() + static_cast<std::int64_t>(slots[t]) * row);
                      }
                      return expected;
                    }));
}

void append_sampling_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                           std::mt19937_64& rng) {
  const std::int64_t rows = std::min<std::int64_t>(tokens, 64);
  const std::string count = std::to_string(rows);
  const std::string shape = "[" + count + ", 32000] k=1";
  auto logits = random({rows, kVocab}, dt, rng, -8, 8);
  auto tokens_out = empty({rows}, DataType::kInt64);
  cases.push_back({"top_k_top_p_sampler", shape, dt, bytes_of({logits, tokens_out}),
                   [=] { ops::top_k_top_p_sampler(*logits, 1, 1.0, 42, *tokens_out); },
                   [=] { return tokens_out; },
                   [=] { return argmax_rows(values(logits), kVocab); }});
  // Probabilities: random weights, the sampler takes each row relative to its sum.
  auto probs = random({rows, kVocab}, dt, rng, 0, 1);
  auto ids = empty({rows}, DataType::kInt32);
  cases.push_back({"topk_topp_sampling", shape, dt, bytes_of({probs, ids}),
                   [=] { ops::topk_topp_sampling(*probs, 1, 1.0, 42, *ids); }, [=] { return ids; },
                   [=] { return argmax_rows(values(probs), kVocab); }});
  // Top-k masking of logits in place (top-k alone: a second run masks nothing more).
  auto masked = random({rows, kVocab}, dt, rng, -8, 8);
  auto top_k = empty({rows}, DataType::kInt64);
  testing::from_doubles(top_k->view(),
                        testing::reference::Values(static_cast<std::size_t>(rows), 50));
  const testing::reference::Values before = values(masked);
  cases.push_back(declared_case("top_k_top_p_mask", "[" + count + ", 32000] k=50", dt,
                                {masked, top_k, nullptr}, {}, 2 * bytes_of({masked}), [=] {
                                  testing::reference::Values expected = before;
                                  for (std::int64_t r = 0; r < rows; ++r) {
                                    const auto row = expected.begin() + r * kVocab;
                                    testing::reference::Values sorted(row, row + kVocab);
                                    std::nth_element(sorted.begin(), sorted.begin() + 49,
                                                     sorted.end(), std::greater<>());
                                    const double kth = sorted[49];
                                    std::replace_if(
                                        row, row + kVocab, [kth](double v) { return v < kth; },
                                        -std::numeric_limits<double>::infinity());
                                  }
                                  return expected;
                                }));
}

}  // namespace

void append_kv_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                     std::mt19937_64& rng) {
  append_rotary_cases(cases, tokens, dt, rng);
  append_cache_case(cases, tokens, dt, rng);
  append_sampling_cases(cases, tokens, dt, rng);
}

}  // namespace tileops::cli::demo
