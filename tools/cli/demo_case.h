// One `tileops demo` case (an operator call, its output and its float64 reference) and the
// helpers that build cases; the cases of each operator family live in their own file.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/reference_ops.h"
#include "tests/support/test_tensors.h"
#include "tileops/core/tensor_storage.h"
#include "tileops/ops/declared_op.h"

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

// A case called through the operator's declaration: `tensors` are its tensor arguments in
// declaration order: nullptr for an omitted optional input, and for an output, optional or not,
// to allocate poisoned with the shape and dtype the declaration gives; the first written one (an
// output or in-out) is checked. `bytes`
// < 0: every tensor's bytes.
inline Case declared_case(std::string op, std::string shape, DataType dt,
                          std::vector<Storage> tensors, std::vector<double> attributes,
                          double bytes, std::function<testing::reference::Values()> reference,
                          std::int64_t dot_length = 0) {
  const ops::DeclaredOp& declared = ops::declared_op(op);
  std::vector<Tensor> views;
  for (const Storage& t : tensors) views.push_back(t ? t->view() : Tensor());
  Storage checked;
  const auto args = declared.decl().arguments();
  for (int i = 0; i < static_cast<int>(args.size()); ++i) {
    const int t = declared.tensor_index(i);
    if (!ops::is_written(args[i].kind)) continue;
    // An optional output whose in-place argument is absent stays absent too, as does a requested
    // output (the demo measures the operator's main result).
    const int source = args[i].in_place_of;
    const bool absent = ops::is_requested_output(args[i]) ||
                        (source >= 0 && !tensors[declared.tensor_index(source)]);
    if (!tensors[t] && args[i].kind != ops::ArgKind::kInOut && !absent) {
      tensors[t] =
          empty(declared.output_shape(i, views, attributes), declared.output_dtype(i, views));
      views[t] = tensors[t]->view();
    }
    if (!checked && tensors[t]) checked = tensors[t];
  }
  if (bytes < 0) {
    bytes = 0;
    for (const Storage& t : tensors) bytes += t ? static_cast<double>(t->bytes()) : 0.0;
  }
  return Case{std::move(op),
              std::move(shape),
              dt,
              bytes,
              [&declared, tensors, views, attributes] { declared.call(views, attributes, {}); },
              [checked] { return checked; },
              std::move(reference),
              dot_length};
}

// rotary_embedding, apply_rotary_pos_emb, reshape_and_cache and the samplers
// (demo_kv_cases.cc), for `tokens` tokens of dtype dt.
void append_kv_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                     std::mt19937_64& rng);

// vLLM's activations beside silu_and_mul, swap_blocks and copy_blocks (demo_vllm_cases.cc).
void append_vllm_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                       std::mt19937_64& rng);

// gemm, matmul and linear (demo_gemm_cases.cc).
void append_gemm_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                       std::mt19937_64& rng);

// flash_attention (causal prefill of `tokens` tokens) and paged_attention (16 sequences decoding
// over a paged cache) cases (demo_attention_cases.cc).
void append_attention_cases(std::vector<Case>& cases, std::int64_t tokens, DataType dt,
                            std::mt19937_64& rng);

}  // namespace tileops::cli::demo
