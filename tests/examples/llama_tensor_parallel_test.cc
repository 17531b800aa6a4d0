// examples/llama's tensor-parallel sharding without MPI: the sizes --tp must divide (errors name
// the config field), the vocabulary slices, take_rows on strided views, and that the shards of
// every rank put together are exactly the whole model, synthetic or loaded from a checkpoint
// (each rank reading only its rows and columns). The MPI runs: llama_tp_test.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "examples/llama/communicator.h"
#include "examples/llama/safetensors.h"
#include "examples/llama/tensor_parallel.h"
#include "examples/llama/weights.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

Config small_config() {
  Config c;
  c.layers = 2;
  c.hidden = 24;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_size = 6;
  c.intermediate = 20;
  c.vocab = 37;  // uneven over 2 and 3 ranks
  c.max_positions = 64;
  c.qkv_bias = true;
  c.dtype = DataType::kFloat32;
  return c;
}

void expect_error_naming(const Config& c, int ranks, const std::string& field) {
  try {
    shard_config(c, {0, ranks});
    FAIL() << "no error for " << field;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(LlamaTensorParallel, SizesTpMustDivideAreNamed) {
  Config c = small_config();
  c.heads = 6;
  c.kv_heads = 6;
  expect_error_naming(c, 4, "num_attention_heads");
  c = small_config();
  c.heads = 6;
  c.kv_heads = 3;
  expect_error_naming(c, 2, "num_key_value_heads");
  c = small_config();
  c.intermediate = 21;
  expect_error_naming(c, 2, "intermediate_size");
  c = small_config();
  c.vocab = 1;
  expect_error_naming(c, 2, "vocab_size");
  const Config local = shard_config(small_config(), {1, 2});
  EXPECT_EQ(local.heads, 2);
  EXPECT_EQ(local.kv_heads, 1);
  EXPECT_EQ(local.intermediate, 10);
  EXPECT_EQ(local.vocab, 37);
}

TEST(LlamaTensorParallel, VocabSlicesCoverTheVocabularyInOrder) {
  for (int ranks : {1, 2, 3, 5}) {
    std::int64_t next = 0;
    for (int r = 0; r < ranks; ++r) {
      const RowRange range = vocab_rows(37, {r, ranks});
      EXPECT_EQ(range.begin, next);
      EXPECT_GE(range.count, 37 / ranks);
      EXPECT_LE(range.count, 37 / ranks + 1);
      next += range.count;
    }
    EXPECT_EQ(next, 37) << ranks << " ranks";
  }
}

TEST(LlamaTensorParallel, TakeRowsReadsTheRangesAndColumnsOfAStridedView) {
  TensorStorage base({7, 5}, DataType::kFloat32);
  auto* v = base.view().data_as<float>();
  for (int i = 0; i < 35; ++i) v[i] = static_cast<float>(i) + 0.5f;
  const Tensor t = base.view().transpose(0, 1);  // [5, 7], strides {1, 5}
  const TensorStorage out = take_rows(t, {{3, 2}, {0, 1}}, {2, 4});
  ASSERT_EQ(out.view().shape(), (Dims{3, 4}));
  const auto* o = out.view().data_as<float>();
  const int rows[] = {3, 4, 0};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(o[i * 4 + j], v[(2 + j) * 5 + rows[i]]) << i << "," << j;
  }
  EXPECT_THROW(take_rows(t, {{4, 2}}), Error);
  EXPECT_THROW(take_rows(t, {{0, 1}}, {5, 3}), Error);
}

// Rank shards stacked along `dim` (0: rows in the fused ranges' order, 1: columns) against the
// whole tensor: every element appears in exactly one shard, where the ranges say.
void expect_rows(const Tensor& full, const Tensor& shard, const std::vector<RowRange>& ranges,
                 RowRange columns = {}) {
  const TensorStorage expected = take_rows(full, ranges, columns);
  ASSERT_EQ(expected.view().shape(), shard.shape()) << shard.describe();
  EXPECT_EQ(std::memcmp(expected.data(), shard.data(), expected.bytes()), 0);
}

void expect_shard_of(const Config& c, const Weights& full, const Weights& part, Shard s) {
  const RowRange vocab = vocab_rows(c.vocab, s);
  EXPECT_EQ(std::memcmp(full.embed.data(), part.embed.data(), full.embed.bytes()), 0);
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const LayerWeights &f = full.layers[l], &p = part.layers[l];
    expect_rows(f.qkv, p.qkv, qkv_rows(c, s));
    expect_rows(f.qkv_bias, p.qkv_bias, qkv_rows(c, s));
    expect_rows(f.o_proj, p.o_proj, {{0, c.hidden}}, o_proj_columns(c, s));
    expect_rows(f.gate_up, p.gate_up, gate_up_rows(c, s));
    expect_rows(f.down, p.down, {{0, c.hidden}}, down_columns(c, s));
  }
  expect_rows(full.lm_head_view(), part.lm_head_view(), {vocab});
}

TEST(LlamaTensorParallel, SyntheticShardsAreTheWholeModelsParts) {
  for (int ranks : {2, 4}) {  // 4 ranks: 2 KV heads, each kept by the 2 ranks that read it
    for (bool tied : {false, true}) {
      Config c = small_config();
      c.tie_embeddings = tied;
      const Weights full = synthetic_weights(c, 7);
      std::vector<int> uses(static_cast<std::size_t>(c.qkv_size()), 0);
      for (int r = 0; r < ranks; ++r) {
        const Weights part = synthetic_weights(c, 7, {r, ranks});
        expect_shard_of(c, full, part, {r, ranks});
        for (const RowRange& range : qkv_rows(c, {r, ranks})) {
          for (std::int64_t i = range.begin; i < range.begin + range.count; ++i) ++uses[i];
        }
      }
      const int kv_uses = ranks > c.kv_heads ? ranks / static_cast<int>(c.kv_heads) : 1;
      for (std::int64_t i = 0; i < c.qkv_size(); ++i) {
        EXPECT_EQ(uses[i], i < c.q_size() ? 1 : kv_uses) << "row " << i << ", " << ranks;
      }
    }
  }
}

TEST(LlamaTensorParallel, RanksReadTheKvHeadOfTheirQueryHeads) {
  Config c = small_config();  // 4 query heads in 2 groups: heads 0-1 read KV head 0
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(shard_config(c, {r, 4}).kv_heads, 1);
    const std::vector<RowRange> rows = qkv_rows(c, {r, 4});
    EXPECT_EQ(rows[0].begin, r * c.head_size);
    EXPECT_EQ(rows[1].begin, c.q_size() + (r / 2) * c.head_size) << r;
    EXPECT_EQ(rows[2].begin, c.q_size() + c.kv_size() + (r / 2) * c.head_size) << r;
  }
}

TEST(LlamaTensorParallel, CheckpointShardsEqualTheSyntheticShards) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("llama_tp_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (bool tied : {false, true}) {
    Config c = small_config();
    c.tie_embeddings = tied;  // tied: the checkpoint has no lm_head, ranks slice the embedding
    const Weights full = synthetic_weights(c, 3);
    write_safetensors(dir / "model.safetensors", checkpoint_tensors(c, full));
    for (int r = 0; r < 2; ++r) {
      const Weights part = load_safetensors_weights(c, dir, {}, {}, {r, 2});
      expect_shard_of(c, full, part, {r, 2});
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(LlamaTensorParallel, SingleRankCommunicator) {
  const auto comm = single_rank_communicator();
  EXPECT_EQ(comm->size(), 1);
  std::vector<float> mine{1, 2, 3}, out(3, -1);
  const std::vector<std::int64_t> counts{12};
  comm->all_gather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(out)), counts);
  EXPECT_EQ(out, mine);
  EXPECT_THROW(comm->all_gather(std::as_bytes(std::span(mine)),
                                std::as_writable_bytes(std::span(out).first(2)), counts),
               Error);
  comm->all_reduce_sum(mine);
  EXPECT_EQ(mine, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(comm->stats().calls, 2);
  EXPECT_NO_THROW(comm->agree("", "to load", 1));
  EXPECT_THROW(comm->agree("disk on fire", "to load", 1), CollectiveError);
}

}  // namespace
}  // namespace tileops::llama
