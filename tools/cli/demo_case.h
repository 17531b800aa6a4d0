// One `tileops demo` case (an operator call, its output and its float64 reference) and the
// helpers that build cases; the cases of each operator family live in their own file.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/tensor_storage.h"

namespace tileops::cli::demo {

using Storage = std::shared_ptr<TensorStorage>;

struct Case {
  std::string op;
  std::string shape;
  DataType dtype;
  double bytes;                                           // bytes read + written by one run
  std::function<void()> run;                              // one call of the operator
  std::function<Storage()> output;                        // the tensor to check
  std::function<testing::reference::Values()> reference;  // float64 expected values
  std::int64_t dot_length = 0;  // > 0: outputs are dot products of this length (wider tolerance)
};

inline Storage random(const Dims& shape, DataType dtype, std::mt19937_64& rng, double lo = -2,
                      double hi = 2) {
  return std::make_shared<TensorStorage>(
      testing::random_tensor(shape, dtype, rng, testing::Layout::kContiguous, lo, hi));
}

inline Storage empty(const Dims& shape, DataType dtype) {
  return std::make_shared<TensorStorage>(testing::poisoned(shape, dtype));
}

inline double bytes_of(std::initializer_list<Storage> tensors) {
  double total = 0;
  for (const Storage& s : tensors) total += static_cast<double>(s->bytes());
  return total;
}

inline testing::reference::Values values(const Storage& s) {
  return testing::to_doubles(s->view());
}

// rotary_embedding, apply_rotary_pos_emb, reshape_and_cache and the samplers
// (demo_kv_cases.cc), for `tokens` tokens of dtype dt.
void append_kv_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                     std::mt19937_64& rng);

// gemm, matmul and linear (demo_gemm_cases.cc).
void append_gemm_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                       std::mt19937_64& rng);

// flash_attention (causal prefill of `tokens` tokens) and paged_attention (16 sequences decoding
// over a paged cache) cases (demo_attention_cases.cc).
void append_attention_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                            std::mt19937_64& rng);

}  // namespace tileops::cli::demo
