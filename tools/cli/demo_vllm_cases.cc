// `tileops demo` cases of vLLM's activations beside silu_and_mul (the gated forms on the Llama
// MLP width, the elementwise ones on the hidden width) and of its cache block copies (64 blocks
// of 16 slots x 8 KV heads x 128).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "tools/cli/demo_case.h"

namespace tileops::cli::demo {
namespace {

namespace ref = testing::reference;
constexpr double kInf = INFINITY;

double gelu(double x) { return x == -kInf ? 0.0 : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double gelu_tanh(double x) {
  return x == -kInf ? 0.0
                    : 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// f(a, b) over the two halves of each row of x (width 2·d).
ref::Values gated_rows(const ref::Values& x, std::int64_t d, double (*f)(double, double)) {
  ref::Values y;
  for (std::size_t r = 0; r * 2 * d < x.size(); ++r) {
    const std::size_t row = r * 2 * static_cast<std::size_t>(d);
    for (std::int64_t j = 0; j < d; ++j) y.push_back(f(x[row + j], x[row + d + j]));
  }
  return y;
}

ref::Values mapped(ref::Values x, double (*f)(double)) {
  for (double& v : x) v = f(v);
  return x;
}

// The values of `dst` once each (src block, dst block) pair is copied; blocks of `block` values.
ref::Values blocks_copied(ref::Values dst, const ref::Values& src, std::int64_t block,
                          const std::vector<std::pair<int, int>>& pairs) {
  for (auto [s, d] : pairs) {
    std::copy(src.begin() + s * block, src.begin() + (s + 1) * block, dst.begin() + d * block);
  }
  return dst;
}

}  // namespace

void append_vllm_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                       std::mt19937_64& rng) {
  constexpr std::int64_t kIntermediate = 11008;
  const std::string tk = std::to_string(tokens);
  auto x = random({tokens, 2 * kIntermediate}, dt, rng, -4, 4);
  const std::string gated_shape = "[" + tk + ", 22016]";
  const auto gated = [&](const char* op, std::vector<double> attributes,
                         double (*f)(double, double)) {
    cases.push_back(declared_case(op, gated_shape, dt, {x, nullptr}, std::move(attributes), -1,
                                  [=] { return gated_rows(values(x), kIntermediate, f); }));
  };
  gated(
      "gelu_and_mul", {-1}, +[](double a, double b) { return gelu(a) * b; });
  gated(
      "gelu_tanh_and_mul", {-1}, +[](double a, double b) { return gelu_tanh(a) * b; });
  gated(
      "fatrelu_and_mul", {0.5, -1}, +[](double a, double b) { return (a > 0.5 ? a : 0.0) * b; });
  gated(
      "mul_and_silu", {-1}, +[](double a, double b) { return a * ref::silu(b); });

  auto h = random({tokens, 4096}, dt, rng, -4, 4);
  const std::string shape = "[" + tk + ", 4096]";
  const auto unary = [&](const char* op, double (*f)(double)) {
    cases.push_back(
        declared_case(op, shape, dt, {h, nullptr}, {}, -1, [=] { return mapped(values(h), f); }));
  };
  unary("gelu_new", gelu_tanh);
  unary(
      "gelu_fast", +[](double v) {
        return v == -kInf
                   ? 0.0
                   : 0.5 * v * (1.0 + std::tanh(v * 0.7978845608 * (1.0 + 0.044715 * v * v)));
      });
  unary(
      "gelu_quick", +[](double v) { return v == -kInf ? 0.0 : v / (1.0 + std::exp(-1.702 * v)); });

  // Pairs whose sources are never destinations: every repetition of a timed run gives the same.
  const std::vector<std::pair<int, int>> pairs{{0, 40}, {3, 17}, {9, 63}, {12, 5}};
  auto mapping = empty({static_cast<std::int64_t>(pairs.size()), 2}, DataType::kInt64);
  ref::Values ids;
  for (auto [s, d] : pairs) {
    ids.push_back(s);
    ids.push_back(d);
  }
  testing::from_doubles(mapping->view(), ids);
  const Dims blocks{64, 16, 8, 128};
  const std::int64_t block = 16 * 8 * 128;
  auto src = random(blocks, dt, rng), dst = random(blocks, dt, rng),
       cache = random(blocks, dt, rng);
  const double moved = 2.0 * static_cast<double>(pairs.size() * block * size_of(dt));
  const ref::Values swapped = blocks_copied(values(dst), values(src), block, pairs);
  cases.push_back(declared_case("swap_blocks", "4 of [64, 16, 8, 128]", dt, {src, dst, mapping}, {},
                                moved, [=] { return ref::Values(swapped); }));
  const ref::Values before = values(cache);
  const ref::Values copied = blocks_copied(before, before, block, pairs);
  cases.push_back(declared_case("copy_blocks", "4 of [64, 16, 8, 128]", dt, {cache, mapping}, {},
                                moved, [=] { return ref::Values(copied); }));
}

}  // namespace tileops::cli::demo
