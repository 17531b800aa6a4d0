#include "examples/llama/model.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "examples/llama/quantize.h"
#include "examples/llama/tensor_parallel.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/ops.h"

namespace tileops::llama {
namespace {

constexpr DataType kI32 = DataType::kInt32;
constexpr DataType kI64 = DataType::kInt64;

Tensor rows(const TensorStorage& s, std::int64_t n) { return s.view().slice(0, 0, n); }

// vLLM's cos_sin_cache: row p holds cos(p·f_i) for the D/2 frequencies, then sin(p·f_i). Only
// the `positions` rows a sequence of the model can reach (its max_context, not max_positions).
TensorStorage rotary_table(const Config& c, std::int64_t positions) {
  const std::int64_t half = c.head_size / 2;
  TensorStorage table({positions, c.head_size}, DataType::kFloat32);
  float* t = table.view().data_as<float>();
  for (std::int64_t i = 0; i < half; ++i) {
    const double freq =
        std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.head_size));
    for (std::int64_t p = 0; p < positions; ++p) {
      t[p * c.head_size + i] = static_cast<float>(std::cos(static_cast<double>(p) * freq));
      t[p * c.head_size + half + i] = static_cast<float>(std::sin(static_cast<double>(p) * freq));
    }
  }
  return table;
}

}  // namespace

CacheGeometry cache_geometry(const Config& config, std::int64_t max_batch, std::int64_t max_context,
                             std::int64_t block_size) {
  constexpr std::int64_t kMaxInt32 = 0x7fffffff;
  if (max_batch < 1 || max_context < 1 || max_context > config.max_positions || block_size < 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama model: need max_batch >= 1, 1 <= max_context <= max_positions (" +
                    std::to_string(config.max_positions) + ") and block_size >= 1; got " +
                    std::to_string(max_batch) + ", " + std::to_string(max_context) + ", " +
                    std::to_string(block_size));
  }
  constexpr std::string_view kWhat = "llama model: KV cache";
  CacheGeometry g;
  g.blocks_per_sequence = max_context / block_size + (max_context % block_size != 0 ? 1 : 0);
  g.blocks = checked_mul(max_batch, g.blocks_per_sequence, kWhat);
  // Prefill packs every sequence's tokens into one batch indexed by int32 cu_seqlens.
  const std::int64_t tokens = checked_mul(max_batch, max_context, kWhat);
  if (g.blocks > kMaxInt32 || tokens > kMaxInt32) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama model: max_batch " + std::to_string(max_batch) + " x max_context " +
                    std::to_string(max_context) + " needs " + std::to_string(g.blocks) +
                    " blocks and " + std::to_string(tokens) + " tokens; the int32 block table " +
                    "and sequence offsets hold at most 2^31 - 1");
  }
  const std::int64_t extents[] = {g.blocks, block_size, config.kv_heads, config.head_size};
  const std::int64_t per_layer =
      checked_bytes(checked_product(extents, kWhat), size_of(config.dtype), kWhat);
  g.bytes = checked_mul(checked_mul(2, per_layer, kWhat), config.layers, kWhat);
  return g;
}

void Profile::add(const std::string& op, double seconds) {
  for (auto& entry : entries_) {
    if (entry.first == op) {
      entry.second += seconds;
      return;
    }
  }
  entries_.emplace_back(op, seconds);
}

double Profile::total() const {
  double sum = 0;
  for (const auto& entry : entries_) sum += entry.second;
  return sum;
}

template <typename F>
void Model::timed(const char* op, F&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  profile_.add(op, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

Model::Model(const Config& config, Weights weights, std::int64_t max_batch,
             std::int64_t max_context, std::int64_t block_size, bool pack_weights,
             Communicator* tensor_parallel)
    : config_(config),
      local_(config),
      weights_(std::move(weights)),
      max_batch_(max_batch),
      max_context_(max_context),
      block_size_(block_size) {
  config_.validate();
  if (tensor_parallel != nullptr && tensor_parallel->size() > 1) {
    comm_ = tensor_parallel;
    local_ = shard_config(config_, {comm_->rank(), comm_->size()});
    vocab_counts_ = vocab_counts(config_.vocab, comm_->size());
  } else {
    vocab_counts_ = {config_.vocab};
  }
  // Sizes first, before the weights are packed: the paged cache's geometry must fit int64 and
  // the int32 block table, sequence lengths and cumulative lengths.
  const CacheGeometry geometry = cache_geometry(local_, max_batch, max_context, block_size);
  blocks_per_sequence_ = geometry.blocks_per_sequence;
  if (static_cast<std::int64_t>(weights_.layers.size()) != config_.layers) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama model", "weights",
                         std::to_string(config_.layers) + " layers",
                         std::to_string(weights_.layers.size()));
  }
  if (pack_weights && ops::linear_packing_pays(config_.dtype)) {
    const auto packed_of = [](const Tensor& w) {
      TensorStorage packed({ops::packed_linear_weight_numel(w.size(0), w.size(1), w.dtype())},
                           w.dtype());
      ops::pack_linear_weight(w, packed);
      return packed;
    };
    // A quantized weight is already in its streaming layout: it stays, with no packed copy.
    const auto pack = [&](TensorStorage& weight) {
      if (is_quantized(weight)) return TensorStorage();
      TensorStorage packed = packed_of(weight);
      weight = TensorStorage();  // the packed copy replaces it
      return packed;
    };
    for (LayerWeights& lw : weights_.layers) {
      packed_.push_back({pack(lw.qkv), pack(lw.o_proj), pack(lw.gate_up), pack(lw.down)});
    }
    // Tied to the embedding, which keeps its rows: the head gets a packed copy.
    packed_lm_head_ =
        weights_.lm_head.view().defined() ? pack(weights_.lm_head) : packed_of(weights_.embed);
  }
  const Dims cache_shape{geometry.blocks, block_size, local_.kv_heads, local_.head_size};
  for (std::int64_t l = 0; l < config_.layers; ++l) {
    key_cache_.emplace_back(cache_shape, config_.dtype);
    value_cache_.emplace_back(cache_shape, config_.dtype);
  }
  // Sequences interleave their blocks (block j of sequence b is j·B + b), so every read goes
  // through the block table as it would with a real allocator.
  block_table_ = TensorStorage({max_batch, blocks_per_sequence_}, kI32);
  auto* table = block_table_.view().data_as<std::int32_t>();
  for (std::int64_t b = 0; b < max_batch; ++b) {
    for (std::int64_t j = 0; j < blocks_per_sequence_; ++j) {
      table[b * blocks_per_sequence_ + j] = static_cast<std::int32_t>(j * max_batch + b);
    }
  }
  cos_sin_ = rotary_table(config_, max_context);
  seq_lens_ = TensorStorage({max_batch}, kI32);
  cu_seqlens_ = TensorStorage({max_batch + 1}, kI32);
  last_rows_ = TensorStorage({max_batch}, kI64);
  last_hidden_ = TensorStorage({max_batch, config_.hidden}, config_.dtype);
  logits_ = TensorStorage({max_batch, config_.vocab}, config_.dtype);
  if (comm_ != nullptr) {
    const std::int64_t mine = vocab_counts_[static_cast<std::size_t>(comm_->rank())];
    local_logits_ = TensorStorage({max_batch, mine}, config_.dtype);
    gathered_ = TensorStorage({max_batch, config_.vocab}, config_.dtype);
  }
  reserve_tokens(max_batch);
}

void Model::reserve_tokens(std::int64_t tokens) {
  if (tokens <= capacity_) return;
  const Config& c = local_;
  ids_ = TensorStorage({tokens}, kI64);
  positions_ = TensorStorage({tokens}, kI64);
  slots_ = TensorStorage({tokens}, kI64);
  residual_ = TensorStorage({tokens, c.hidden}, c.dtype);
  hidden_ = TensorStorage({tokens, c.hidden}, c.dtype);
  normed_ = TensorStorage({tokens, c.hidden}, c.dtype);
  qkv_ = TensorStorage({tokens, c.qkv_size()}, c.dtype);
  attn_ = TensorStorage({tokens, c.heads, c.head_size}, c.dtype);
  gate_up_ = TensorStorage({tokens, checked_mul(2, c.intermediate, "llama model")}, c.dtype);
  act_ = TensorStorage({tokens, c.intermediate}, c.dtype);
  if (comm_ != nullptr) reduce_ = TensorStorage({tokens, c.hidden}, DataType::kFloat32);
  capacity_ = tokens;
}

void Model::warm_up() {
  prefill({{0}});
  lengths_.clear();
  profile_.clear();
}

Tensor Model::prefill(const std::vector<std::vector<std::int64_t>>& prompts) {
  const auto batch = static_cast<std::int64_t>(prompts.size());
  if (batch < 1 || batch > max_batch_) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama prefill", "prompts",
                         "1 to " + std::to_string(max_batch_) + " prompts", std::to_string(batch));
  }
  std::int64_t total = 0;
  for (const auto& p : prompts) {
    if (p.empty() || static_cast<std::int64_t>(p.size()) > max_context_) {
      throw_argument_error(ErrorKind::kInvalidArgument, "llama prefill", "prompts",
                           "every prompt of 1 to " + std::to_string(max_context_) + " tokens",
                           std::to_string(p.size()) + " tokens");
    }
    total += static_cast<std::int64_t>(p.size());
  }
  reserve_tokens(total);
  auto* ids = ids_.view().data_as<std::int64_t>();
  auto* positions = positions_.view().data_as<std::int64_t>();
  auto* slots = slots_.view().data_as<std::int64_t>();
  auto* cu = cu_seqlens_.view().data_as<std::int32_t>();
  auto* last = last_rows_.view().data_as<std::int64_t>();
  const auto* table = block_table_.view().data_as<std::int32_t>();
  lengths_.assign(batch, 0);
  std::int64_t row = 0;
  cu[0] = 0;
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(prompts[b].size()); ++i, ++row) {
      ids[row] = prompts[b][i];
      positions[row] = i;
      slots[row] =
          table[b * blocks_per_sequence_ + i / block_size_] * block_size_ + i % block_size_;
    }
    lengths_[b] = static_cast<std::int64_t>(prompts[b].size());
    cu[b + 1] = static_cast<std::int32_t>(row);
    last[b] = row - 1;
  }
  forward(total, /*prefill=*/true);
  const Tensor last_rows = rows(last_rows_, batch);
  timed("embedding",
        [&] { ops::embedding(last_rows, rows(normed_, total), rows(last_hidden_, batch)); });
  return logits(rows(last_hidden_, batch), batch);
}

Tensor Model::decode(std::span<const std::int64_t> tokens) {
  const std::int64_t batch = this->batch();
  if (batch == 0 || static_cast<std::int64_t>(tokens.size()) != batch) {
    throw_argument_error(ErrorKind::kInvalidArgument, "llama decode", "tokens",
                         "one token per prefilled sequence (" + std::to_string(batch) + ")",
                         std::to_string(tokens.size()));
  }
  auto* ids = ids_.view().data_as<std::int64_t>();
  auto* positions = positions_.view().data_as<std::int64_t>();
  auto* slots = slots_.view().data_as<std::int64_t>();
  auto* seq_lens = seq_lens_.view().data_as<std::int32_t>();
  const auto* table = block_table_.view().data_as<std::int32_t>();
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t pos = lengths_[b];
    if (pos >= max_context_) {
      throw Error(ErrorKind::kInvalidArgument, "llama decode: sequence " + std::to_string(b) +
                                                   " is full (max_context " +
                                                   std::to_string(max_context_) + ")");
    }
    ids[b] = tokens[b];
    positions[b] = pos;
    slots[b] =
        table[b * blocks_per_sequence_ + pos / block_size_] * block_size_ + pos % block_size_;
    seq_lens[b] = static_cast<std::int32_t>(pos + 1);
    lengths_[b] = pos + 1;
  }
  forward(batch, /*prefill=*/false);
  return logits(rows(normed_, batch), batch);
}

Tensor Model::logits(const Tensor& x, std::int64_t batch) {
  const Tensor out = rows(comm_ != nullptr ? local_logits_ : logits_, batch);
  timed("linear", [&] { project(x, weights_.lm_head_view(), packed_lm_head_, Tensor(), out); });
  if (comm_ == nullptr) return out;
  timed("all_gather", [&] {
    // In the model dtype: the logits are copied, not summed. Rank r's block is its
    // [batch, count_r] rows; the full rows interleave the blocks.
    const std::int64_t element = out.element_size(), vocab = config_.vocab;
    std::vector<std::int64_t> counts;
    for (const std::int64_t c : vocab_counts_) counts.push_back(batch * c * element);
    const auto* mine = static_cast<const std::byte*>(out.data());
    auto* gathered = static_cast<std::byte*>(gathered_.data());
    comm_->all_gather({mine, static_cast<std::size_t>(out.numel() * element)},
                      {gathered, static_cast<std::size_t>(batch * vocab * element)}, counts);
    auto* full = static_cast<std::byte*>(logits_.data());
    std::int64_t block = 0, column = 0;
    for (const std::int64_t c : vocab_counts_) {
      for (std::int64_t b = 0; b < batch; ++b) {
        std::memcpy(full + (b * vocab + column) * element, gathered + block + b * c * element,
                    static_cast<std::size_t>(c * element));
      }
      block += batch * c * element;
      column += c;
    }
  });
  return rows(logits_, batch);
}

void Model::all_reduce(const Tensor& out) {
  if (comm_ == nullptr) return;
  timed("all_reduce", [&] {
    // float32 whatever the model dtype: one rounding to it after the sum.
    const bool in_place = out.dtype() == DataType::kFloat32 && out.is_contiguous();
    const Tensor sum = in_place ? out : rows(reduce_, out.size(0));
    if (!in_place) ops::cast(out, sum);
    comm_->all_reduce_sum({sum.data_as<float>(), static_cast<std::size_t>(sum.numel())});
    if (!in_place) ops::cast(sum, out);
  });
}

void Model::forward(std::int64_t tokens, bool prefill) {
  const Config& c = local_;
  const Tensor residual = rows(residual_, tokens), hidden = rows(hidden_, tokens);
  const Tensor normed = rows(normed_, tokens), qkv = rows(qkv_, tokens);
  const Tensor gate_up = rows(gate_up_, tokens), act = rows(act_, tokens);
  const Tensor attn = rows(attn_, tokens).with_shape({tokens, c.q_size()}, {c.q_size(), 1});
  timed("embedding", [&] { ops::embedding(rows(ids_, tokens), weights_.embed, residual); });
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const LayerWeights& w = weights_.layers[l];
    const PackedLayer none;
    const PackedLayer& p = packed_.empty() ? none : packed_[l];
    if (l == 0) {
      timed("rms_norm", [&] { ops::rms_norm(residual, w.input_norm, c.rms_eps, normed); });
    } else {
      timed("add_rms_norm", [&] {
        ops::add_rms_norm(hidden, residual, w.input_norm, c.rms_eps, normed, residual);
      });
    }
    timed("linear", [&] { project(normed, w.qkv, p.qkv, w.qkv_bias, qkv); });
    timed("rotary_embedding", [&] {
      ops::rotary_embedding(rows(positions_, tokens), qkv.slice(1, 0, c.q_size()),
                            qkv.slice(1, c.q_size(), c.kv_size()), c.head_size, cos_sin_, true, 0,
                            Tensor(), Tensor());
    });
    attention(l, tokens, prefill);
    timed("linear", [&] { project(attn, w.o_proj, p.o_proj, Tensor(), hidden); });
    all_reduce(hidden);
    timed("add_rms_norm",
          [&] { ops::add_rms_norm(hidden, residual, w.post_norm, c.rms_eps, normed, residual); });
    timed("linear", [&] { project(normed, w.gate_up, p.gate_up, Tensor(), gate_up); });
    timed("silu_and_mul", [&] { ops::silu_and_mul(gate_up, -1, act); });
    timed("linear", [&] { project(act, w.down, p.down, Tensor(), hidden); });
    all_reduce(hidden);
  }
  timed("add_rms_norm", [&] {
    ops::add_rms_norm(hidden, residual, weights_.final_norm, c.rms_eps, normed, residual);
  });
}

void Model::project(const Tensor& x, const Tensor& weight, const Tensor& packed, const Tensor& bias,
                    const Tensor& out) {
  if (packed.data() != nullptr) {
    ops::linear_packed(x, packed, bias, out);
  } else if (is_quantized(weight)) {
    ops::linear_quantized(x, weight, bias, out);
  } else {
    ops::linear(x, weight, bias, out);
  }
}

void Model::attention(std::int64_t layer, std::int64_t tokens, bool prefill) {
  const Config& c = local_;
  const Tensor qkv = rows(qkv_, tokens);
  const std::int64_t row = c.qkv_size(), d = c.head_size;
  const auto heads_view = [&](std::int64_t offset, std::int64_t heads) {
    return qkv.slice(1, offset, heads * d).with_shape({tokens, heads, d}, {row, d, 1});
  };
  const Tensor q = heads_view(0, c.heads);
  const Tensor k = heads_view(c.q_size(), c.kv_heads);
  const Tensor v = heads_view(c.q_size() + c.kv_size(), c.kv_heads);
  timed("reshape_and_cache", [&] {
    ops::reshape_and_cache(k, v, key_cache_[layer], value_cache_[layer], rows(slots_, tokens));
  });
  ops::AttentionAttributes attrs;
  attrs.num_heads = c.heads;
  attrs.num_kv_heads = c.kv_heads;
  attrs.head_size = d;
  attrs.scale = 1.0 / std::sqrt(static_cast<double>(d));
  attrs.causal = true;
  attrs.block_size = prefill ? 0 : block_size_;  // prefill reads k and v, not the cache
  const Tensor out = rows(attn_, tokens);
  const std::int64_t batch = this->batch();
  if (prefill) {
    const Tensor cu = rows(cu_seqlens_, batch + 1);
    timed("flash_attention", [&] { ops::flash_attention(q, k, v, cu, cu, Tensor(), attrs, out); });
  } else {
    const Tensor seq_lens = rows(seq_lens_, batch), table = rows(block_table_, batch);
    timed("paged_attention", [&] {
      ops::paged_attention(q, key_cache_[layer], value_cache_[layer], seq_lens, table, attrs, out,
                           seq_lens, table);
    });
  }
}

}  // namespace tileops::llama
