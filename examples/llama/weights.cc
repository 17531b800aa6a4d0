#include "examples/llama/weights.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>

#include "examples/llama/safetensors.h"
#include "examples/llama/tensor_parallel.h"
#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"
#include "tileops/ops/cast.h"

namespace tileops::llama {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// center ± half_width, uniform, rounded to the model dtype.
TensorStorage uniform(const Dims& shape, DataType dtype, std::uint64_t seed, double center,
                      double half_width) {
  TensorStorage f32(shape, DataType::kFloat32);
  float* values = f32.view().data_as<float>();
  std::uint64_t state = seed;
  for (std::int64_t i = 0; i < shape.product(); ++i) {
    const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
    values[i] = static_cast<float>(center + half_width * (2 * u - 1));
  }
  if (dtype == DataType::kFloat32) return f32;
  TensorStorage out(shape, dtype);
  ops::cast(f32, out);
  return out;
}

// Uniform with the variance of 1/fan_in: keeps x·Wᵀ at the scale of x.
TensorStorage projection(const Dims& shape, DataType dtype, std::uint64_t seed) {
  return uniform(shape, dtype, seed, 0, std::sqrt(3.0 / static_cast<double>(shape[1])));
}

std::string layer_prefix(std::int64_t layer) {
  return "model.layers." + std::to_string(layer) + ".";
}

// The tensor, or an aligned copy when the file placed it off its element size's alignment
// (the format does not require it; the operators read whole elements).
Tensor aligned(const Tensor& t, TensorStorage& copy) {
  if (reinterpret_cast<std::uintptr_t>(t.data()) % t.element_size() == 0) return t;
  copy = TensorStorage(t.shape(), t.dtype());
  std::memcpy(copy.view().data(), t.data(), copy.bytes());
  return copy;
}

// Every .safetensors file of the checkpoint, looked up by tensor name.
class Checkpoint {
 public:
  explicit Checkpoint(const std::filesystem::path& file_or_dir) : where_(file_or_dir.string()) {
    std::vector<std::filesystem::path> paths;
    if (std::filesystem::is_directory(file_or_dir)) {
      for (const auto& entry : std::filesystem::directory_iterator(file_or_dir)) {
        if (entry.path().extension() == ".safetensors") paths.push_back(entry.path());
      }
      std::sort(paths.begin(), paths.end());
    } else {
      paths.push_back(file_or_dir);
    }
    if (paths.empty()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "llama: no .safetensors file in " + file_or_dir.string());
    }
    for (const auto& p : paths) {
      files_.push_back(std::make_unique<SafetensorsFile>(p));
      for (const std::string& name : files_.back()->names()) {
        const auto [it, added] = owner_.emplace(name, files_.back().get());
        if (!added) {  // which copy would be used is not for the loader to guess
          throw Error(ErrorKind::kInvalidArgument,
                      "llama checkpoint: tensor '" + name + "' is in both " +
                          it->second->path().string() + " and " + p.string());
        }
      }
    }
  }

  bool contains(const std::string& name) const { return owner_.count(name) != 0; }

  // The tensor as stored (a view of the mapped file), or an undefined Tensor.
  Tensor find(const std::string& name) const {
    const auto it = owner_.find(name);
    return it == owner_.end() ? Tensor() : it->second->tensor(name);
  }

  // The named tensors stacked along dim 0 into a new [sum of rows, ...] tensor of `dtype`
  // (any dtype converted). Every shape is checked against the file before allocating, so a
  // config can only ask for as much memory as the checkpoint holds.
  TensorStorage load(const std::vector<std::pair<std::string, Dims>>& parts, DataType dtype) const {
    std::vector<Tensor> sources;
    std::int64_t rows = 0;
    for (const auto& [name, shape] : parts) {
      sources.push_back(checked(name, shape));
      rows = checked_add(rows, shape[0], "llama checkpoint " + name);
    }
    Dims shape = parts.front().second;
    shape[0] = rows;
    TensorStorage out(shape, dtype);
    std::int64_t row = 0;
    for (const Tensor& t : sources) {
      TensorStorage copy;
      ops::cast(aligned(t, copy), out.view().slice(0, row, t.size(0)));
      row += t.size(0);
    }
    return out;
  }

  // One tensor parallel rank's part of the named [rows, ...] tensors stacked: rows `ranges[i]`
  // (counted in the stacked tensor, within part i) and the columns `columns` of each (all when
  // count is 0). Only those elements are read from the mapped file.
  TensorStorage load_shard(const std::vector<std::pair<std::string, Dims>>& parts,
                           const std::vector<RowRange>& ranges, RowRange columns,
                           DataType dtype) const {
    std::vector<TensorStorage> pieces;
    std::int64_t rows = 0, first_row = 0;  // of the part in the stacked tensor
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& [name, shape] = parts[i];
      const RowRange within{ranges[i].begin - first_row, ranges[i].count};
      pieces.push_back(take_rows(checked(name, shape), {within}, columns));
      rows = checked_add(rows, ranges[i].count, "llama checkpoint " + name);
      first_row = checked_add(first_row, shape[0], "llama checkpoint " + name);
    }
    Dims shape = pieces.front().view().shape();
    shape[0] = rows;
    TensorStorage out(shape, dtype);
    std::int64_t row = 0;
    for (const TensorStorage& piece : pieces) {
      ops::cast(piece, out.view().slice(0, row, piece.view().size(0)));
      row += piece.view().size(0);
    }
    return out;
  }

 private:
  // The named tensor (a view of the mapped file), checked to exist with `shape`.
  Tensor checked(const std::string& name, const Dims& shape) const {
    const auto it = owner_.find(name);
    if (it == owner_.end()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "llama checkpoint: tensor '" + name + "' is missing from " + where_);
    }
    const Tensor t = it->second->tensor(name);
    if (!(t.shape() == shape)) {
      throw_argument_error(ErrorKind::kInvalidArgument, "llama checkpoint", name,
                           "shape " + shape.to_string(), t.shape().to_string());
    }
    return t;
  }

  std::string where_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> owner_;
};

// A rank's rows and columns of each split projection (all empty when the model is whole).
struct ShardRanges {
  std::vector<RowRange> qkv, gate_up;
  RowRange o_columns, down_part, vocab;
};
ShardRanges shard_ranges(const Config& config, const Shard& shard) {
  if (!shard.split()) return {};
  return {qkv_rows(config, shard), gate_up_rows(config, shard), o_proj_columns(config, shard),
          down_columns(config, shard), vocab_rows(config.vocab, shard)};
}

}  // namespace

Weights synthetic_weights(const Config& config, std::uint64_t seed, Shard shard) {
  config.validate();
  const DataType dt = config.dtype;
  std::uint64_t next = seed * 1000003;
  // Every rank draws the whole model's numbers (one tensor at a time) and keeps its part, so
  // any number of ranks runs the same model.
  const auto keep = [&](TensorStorage full, const std::vector<RowRange>& rows,
                        RowRange columns = {}) {
    if (!shard.split()) return full;
    return take_rows(full, rows, columns);
  };
  const std::int64_t h = config.hidden;
  const std::vector<RowRange> hidden_rows{{0, h}};
  const auto [qkv, gate_up, o_columns, down_part, vocab] = shard_ranges(config, shard);
  Weights w;
  w.embed = uniform({config.vocab, h}, dt, ++next, 0, 1);
  for (std::int64_t l = 0; l < config.layers; ++l) {
    LayerWeights& lw = w.layers.emplace_back();
    lw.input_norm = uniform({h}, dt, ++next, 1, 0.1);
    lw.qkv = keep(projection({config.qkv_size(), h}, dt, ++next), qkv);
    if (config.qkv_bias) lw.qkv_bias = keep(uniform({config.qkv_size()}, dt, ++next, 0, 0.1), qkv);
    lw.o_proj = keep(projection({h, config.q_size()}, dt, ++next), hidden_rows, o_columns);
    lw.post_norm = uniform({h}, dt, ++next, 1, 0.1);
    lw.gate_up = keep(
        projection({checked_mul(2, config.intermediate, "llama weights gate_up"), h}, dt, ++next),
        gate_up);
    lw.down = keep(projection({h, config.intermediate}, dt, ++next), hidden_rows, down_part);
  }
  w.final_norm = uniform({h}, dt, ++next, 1, 0.1);
  if (!config.tie_embeddings) {
    w.lm_head = keep(projection({config.vocab, h}, dt, ++next), {vocab});
  } else if (shard.split()) {
    w.lm_head = take_rows(w.embed, {vocab});  // the embedding stays whole for the lookup
  }
  return w;
}

std::vector<std::pair<std::string, Tensor>> checkpoint_tensors(const Config& config,
                                                               const Weights& weights) {
  const std::int64_t q = config.q_size(), kv = config.kv_size(), inter = config.intermediate;
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("model.embed_tokens.weight", weights.embed);
  for (std::int64_t l = 0; l < config.layers; ++l) {
    const LayerWeights& lw = weights.layers[l];
    const std::string p = layer_prefix(l);
    const Tensor qkv = lw.qkv;
    out.emplace_back(p + "input_layernorm.weight", lw.input_norm);
    out.emplace_back(p + "self_attn.q_proj.weight", qkv.slice(0, 0, q));
    out.emplace_back(p + "self_attn.k_proj.weight", qkv.slice(0, q, kv));
    out.emplace_back(p + "self_attn.v_proj.weight", qkv.slice(0, q + kv, kv));
    if (config.qkv_bias) {
      const Tensor bias = lw.qkv_bias;
      out.emplace_back(p + "self_attn.q_proj.bias", bias.slice(0, 0, q));
      out.emplace_back(p + "self_attn.k_proj.bias", bias.slice(0, q, kv));
      out.emplace_back(p + "self_attn.v_proj.bias", bias.slice(0, q + kv, kv));
    }
    out.emplace_back(p + "self_attn.o_proj.weight", lw.o_proj);
    out.emplace_back(p + "post_attention_layernorm.weight", lw.post_norm);
    const Tensor gate_up = lw.gate_up;
    out.emplace_back(p + "mlp.gate_proj.weight", gate_up.slice(0, 0, inter));
    out.emplace_back(p + "mlp.up_proj.weight", gate_up.slice(0, inter, inter));
    out.emplace_back(p + "mlp.down_proj.weight", lw.down);
  }
  out.emplace_back("model.norm.weight", weights.final_norm);
  if (!config.tie_embeddings) out.emplace_back("lm_head.weight", weights.lm_head);
  return out;
}

Weights load_safetensors_weights(const Config& config, const std::filesystem::path& file_or_dir,
                                 const std::optional<Int4Quantization>& quantization,
                                 const std::function<void(std::int64_t, std::int64_t)>& progress,
                                 Shard shard) {
  config.validate();
  if (quantization && shard.split()) {
    throw Error(ErrorKind::kInvalidArgument,
                "llama checkpoint: tensor parallelism (--tp) does not shard GPTQ/AWQ int4 "
                "checkpoints; run them on one rank, or quantize float weights at load "
                "(--quantize)");
  }
  const Checkpoint checkpoint(file_or_dir);
  const DataType dt = config.dtype;
  const std::int64_t q = config.q_size(), kv = config.kv_size(), inter = config.intermediate;
  const std::int64_t h = config.hidden;
  const auto one = [&](const std::string& name, const Dims& shape) {
    return checkpoint.load({{name, shape}}, dt);
  };
  // A projection: int4 when the checkpoint is quantized and ships `<name>.qweight`, else the
  // named float weights stacked, or this rank's rows (`rows`, one range per part) and columns.
  // parts: {checkpoint name without ".weight", rows}.
  const auto projection = [&](const std::vector<std::pair<std::string, std::int64_t>>& parts,
                              std::int64_t k, const std::vector<RowRange>& rows = {},
                              RowRange columns = {}) {
    if (quantization && checkpoint.contains(parts.front().first + ".qweight")) {
      std::vector<Int4Linear> linears;
      linears.reserve(parts.size());
      for (const auto& [name, n] : parts) {
        linears.push_back({name, checkpoint.find(name + ".qweight"),
                           checkpoint.find(name + ".qzeros"), checkpoint.find(name + ".scales"),
                           checkpoint.find(name + ".g_idx"), n});
      }
      return convert_int4(*quantization, linears, k);
    }
    std::vector<std::pair<std::string, Dims>> named;
    named.reserve(parts.size());
    for (const auto& [name, n] : parts) named.emplace_back(name + ".weight", Dims{n, k});
    if (!shard.split()) return checkpoint.load(named, dt);
    return checkpoint.load_shard(
        named, rows.empty() ? std::vector<RowRange>{{0, parts[0].second}} : rows, columns, dt);
  };
  const auto [qkv, gate_up, o_columns, down_part, vocab] = shard_ranges(config, shard);
  Weights w;
  w.embed = one("model.embed_tokens.weight", {config.vocab, h});
  for (std::int64_t l = 0; l < config.layers; ++l) {
    LayerWeights& lw = w.layers.emplace_back();
    const std::string p = layer_prefix(l) + "self_attn.";
    lw.input_norm = one(layer_prefix(l) + "input_layernorm.weight", {h});
    lw.qkv = projection({{p + "q_proj", q}, {p + "k_proj", kv}, {p + "v_proj", kv}}, h, qkv);
    if (config.qkv_bias) {
      const std::vector<std::pair<std::string, Dims>> biases{
          {p + "q_proj.bias", {q}}, {p + "k_proj.bias", {kv}}, {p + "v_proj.bias", {kv}}};
      lw.qkv_bias =
          shard.split() ? checkpoint.load_shard(biases, qkv, {}, dt) : checkpoint.load(biases, dt);
    }
    lw.o_proj = projection({{p + "o_proj", h}}, q, {}, o_columns);
    lw.post_norm = one(layer_prefix(l) + "post_attention_layernorm.weight", {h});
    const std::string mlp = layer_prefix(l) + "mlp.";
    lw.gate_up = projection({{mlp + "gate_proj", inter}, {mlp + "up_proj", inter}}, h, gate_up);
    lw.down = projection({{mlp + "down_proj", h}}, inter, {}, down_part);
    if (progress) progress(l + 1, config.layers);
  }
  w.final_norm = one("model.norm.weight", {h});
  // Some tied checkpoints still carry lm_head.weight; use it when present.
  const bool own_head = !config.tie_embeddings || checkpoint.contains("lm_head.weight");
  if (own_head) {
    w.lm_head = shard.split() ? checkpoint.load_shard({{"lm_head.weight", {config.vocab, h}}},
                                                      {vocab}, {}, dt)
                              : one("lm_head.weight", {config.vocab, h});
  } else if (shard.split()) {
    w.lm_head = take_rows(w.embed, {vocab});  // the embedding stays whole for the lookup
  }
  return w;
}

}  // namespace tileops::llama
