// A Llama-architecture decoder built only from tileops operators, with a paged KV cache:
// prefill runs flash_attention over the packed prompts, decode runs paged_attention.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "examples/llama/communicator.h"
#include "examples/llama/config.h"
#include "examples/llama/weights.h"
#include "tileops/core/tensor_storage.h"

namespace tileops::llama {

// Wall time per operator over the model's calls, in the order operators first ran.
class Profile {
 public:
  void add(const std::string& op, double seconds);
  void clear() { entries_.clear(); }
  double total() const;
  const std::vector<std::pair<std::string, double>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, double>> entries_;
};

// The paged KV cache of a Model: validated (Model's limits, counts checked against int64 and
// the int32 indices), with its size, e.g. to check it against the memory before building.
struct CacheGeometry {
  std::int64_t blocks_per_sequence = 0, blocks = 0;
  std::int64_t bytes = 0;  // keys and values of every layer
};
CacheGeometry cache_geometry(const Config& config, std::int64_t max_batch, std::int64_t max_context,
                             std::int64_t block_size);

class Model {
 public:
  // Room for `max_batch` sequences of up to `max_context` tokens each (prompt + generated).
  // pack_weights: the projections (qkv, o_proj, gate_up, down, lm_head) are repacked once with
  // ops::pack_linear_weight and run through ops::linear_packed, which streams them at the
  // memory's speed in decode; their [N, K] copies are then released. Not where
  // ops::linear_packing_pays says packing loses on this CPU (bfloat16 on AMX). A projection that
  // `weights` holds quantized (quantize_weights, a GPTQ/AWQ checkpoint) runs through
  // ops::linear_quantized either way.
  // tensor_parallel: when given with more than one rank, `weights` are this rank's shard
  // (synthetic_weights / load_safetensors_weights with its Shard): the rank runs its heads and
  // intermediate rows, all-reduces the row-parallel o_proj and down outputs (float32) and
  // all-gathers its vocabulary slice of the logits, so every rank returns the full logits. The
  // communicator must outlive the model.
  Model(const Config& config, Weights weights, std::int64_t max_batch, std::int64_t max_context,
        std::int64_t block_size = 16, bool pack_weights = true,
        Communicator* tensor_parallel = nullptr);

  // Starts one sequence per prompt (forgetting earlier ones) and returns the logits of each
  // prompt's last token: [prompts.size(), vocab] in the model dtype (valid until the next call).
  Tensor prefill(const std::vector<std::vector<std::int64_t>>& prompts);
  // Runs a one-token prompt through every layer and forgets it (batch() is then 0), so that the
  // first request does not pay first-use costs: preparing the operators, their workspaces and
  // the first read of each weight (on a 2-vCPU Zen 5 VM a 46 MB projection's first read took
  // 15-38 ms against 2.4 ms after, and a 32-token prefill 0.46 s against 0.26 s). llama.cpp
  // warms up at load likewise. The profile is cleared. Every rank of a split model calls it.
  void warm_up();
  // Appends one token to every sequence and returns its logits [batch, vocab].
  Tensor decode(std::span<const std::int64_t> tokens);

  const Config& config() const { return config_; }
  std::int64_t batch() const { return static_cast<std::int64_t>(lengths_.size()); }
  Profile& profile() { return profile_; }

 private:
  void reserve_tokens(std::int64_t tokens);
  // Runs every layer and the final norm over the first `tokens` rows of the activations; ids,
  // positions and slots are already written. `prefill` selects the attention form.
  void forward(std::int64_t tokens, bool prefill);
  void attention(std::int64_t layer, std::int64_t tokens, bool prefill);
  template <typename F>
  void timed(const char* op, F&& call);
  // out = x·weightᵀ + bias, with the packed form of the weight when the model has one.
  void project(const Tensor& x, const Tensor& weight, const Tensor& packed, const Tensor& bias,
               const Tensor& out);
  // Sums a row-parallel projection's partial `out` over the ranks (nothing on one rank).
  void all_reduce(const Tensor& out);
  // The lm_head over the first `batch` rows of `x` into logits_: this rank's vocabulary slice,
  // gathered from every rank when split.
  Tensor logits(const Tensor& x, std::int64_t batch);

  struct PackedLayer {
    TensorStorage qkv, o_proj, gate_up, down;
  };

  Config config_;
  Config local_;  // this rank's sizes: heads, kv_heads and intermediate divided by the ranks
  Communicator* comm_ = nullptr;            // set only when split over more than one rank
  std::vector<std::int64_t> vocab_counts_;  // rows of the lm_head per rank
  Weights weights_;
  std::vector<PackedLayer> packed_;  // per layer when packing, else empty
  TensorStorage packed_lm_head_;     // when packing
  std::int64_t max_batch_, max_context_, block_size_, blocks_per_sequence_;
  std::vector<std::int64_t> lengths_;  // tokens cached per sequence

  TensorStorage cos_sin_;                               // [max_positions, head_size] f32
  std::vector<TensorStorage> key_cache_, value_cache_;  // per layer [blocks, bs, Hkv, D]
  TensorStorage block_table_;                           // int32 [max_batch, blocks/seq]
  TensorStorage seq_lens_, cu_seqlens_, last_rows_;     // int32 [B], int32 [B+1], int64 [B]
  std::int64_t capacity_ = 0;                           // tokens the activations hold
  TensorStorage ids_, positions_, slots_;               // int64 [T]
  TensorStorage residual_, hidden_, normed_, qkv_, attn_, gate_up_, act_;
  TensorStorage last_hidden_, logits_;  // [B, hidden], [B, vocab]
  // Split only: float32 staging of the all-reduce [T, hidden], this rank's logits
  // [B, vocab slice] and every rank's, gathered (rank blocks one after the other).
  TensorStorage reduce_, local_logits_, gathered_;
  Profile profile_;
};

}  // namespace tileops::llama
