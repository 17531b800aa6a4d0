#include "examples/llama/tensor_parallel.h"

#include <cstring>
#include <string>

#include "tileops/core/checked_size.h"
#include "tileops/core/error.h"

namespace tileops::llama {
namespace {

void require_divides(std::int64_t value, int size, const char* field) {
  if (value % size != 0) {
    throw Error(ErrorKind::kInvalidArgument, "tensor parallel: --tp " + std::to_string(size) +
                                                 " must divide the model's " + field + " (" +
                                                 std::to_string(value) + ")");
  }
}

}  // namespace

Config shard_config(const Config& full, Shard shard) {
  if (shard.size < 1 || shard.rank < 0 || shard.rank >= shard.size) {
    throw Error(ErrorKind::kInvalidArgument, "tensor parallel: rank " + std::to_string(shard.rank) +
                                                 " of " + std::to_string(shard.size) +
                                                 " ranks is not a rank");
  }
  require_divides(full.heads, shard.size, "num_attention_heads (--heads)");
  // Fewer KV heads than ranks: each rank keeps the one KV head its query heads read (heads is
  // a multiple of kv_heads, so a rank's query heads share one when the ranks are a multiple).
  if (full.kv_heads % shard.size != 0 && shard.size % full.kv_heads != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "tensor parallel: --tp " + std::to_string(shard.size) +
                    " must divide the model's num_key_value_heads (--kv-heads) (" +
                    std::to_string(full.kv_heads) + ") or be a multiple of it");
  }
  require_divides(full.intermediate, shard.size, "intermediate_size (--intermediate)");
  if (full.vocab < shard.size) {
    throw Error(ErrorKind::kInvalidArgument, "tensor parallel: --tp " + std::to_string(shard.size) +
                                                 " exceeds the model's vocab_size (" +
                                                 std::to_string(full.vocab) + ")");
  }
  Config local = full;
  local.heads = full.heads / shard.size;
  local.kv_heads = full.kv_heads >= shard.size ? full.kv_heads / shard.size : 1;
  local.intermediate = full.intermediate / shard.size;
  return local;
}

std::vector<std::int64_t> vocab_counts(std::int64_t vocab, int size) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(size), vocab / size);
  for (std::int64_t r = 0; r < vocab % size; ++r) counts[static_cast<std::size_t>(r)] += 1;
  return counts;
}

RowRange vocab_rows(std::int64_t vocab, Shard shard) {
  const std::vector<std::int64_t> counts = vocab_counts(vocab, shard.size);
  RowRange range;
  for (int r = 0; r < shard.rank; ++r) range.begin += counts[static_cast<std::size_t>(r)];
  range.count = counts[static_cast<std::size_t>(shard.rank)];
  return range;
}

std::vector<RowRange> qkv_rows(const Config& full, Shard shard) {
  const Config local = shard_config(full, shard);
  const std::int64_t q = local.q_size(), kv = local.kv_size();
  // The rank's first KV head: its own slice, or (replicated) the head of its query heads.
  const std::int64_t kv_head = full.kv_heads >= shard.size
                                   ? shard.rank * local.kv_heads
                                   : shard.rank / (shard.size / full.kv_heads);
  const std::int64_t k = kv_head * full.head_size;
  return {{shard.rank * q, q}, {full.q_size() + k, kv}, {full.q_size() + full.kv_size() + k, kv}};
}

std::vector<RowRange> gate_up_rows(const Config& full, Shard shard) {
  const std::int64_t i = shard_config(full, shard).intermediate;
  return {{shard.rank * i, i}, {full.intermediate + shard.rank * i, i}};
}

RowRange o_proj_columns(const Config& full, Shard shard) {
  const std::int64_t q = shard_config(full, shard).q_size();
  return {shard.rank * q, q};
}

RowRange down_columns(const Config& full, Shard shard) {
  const std::int64_t i = shard_config(full, shard).intermediate;
  return {shard.rank * i, i};
}

TensorStorage take_rows(const Tensor& t, const std::vector<RowRange>& ranges, RowRange columns) {
  constexpr std::string_view kWhat = "tensor parallel shard";
  const bool matrix = t.rank() == 2;
  const std::int64_t width = matrix ? t.size(1) : 1;
  if (columns.count == 0) columns = {0, width};
  if (columns.begin < 0 || columns.count < 1 || columns.begin > width - columns.count) {
    throw Error(ErrorKind::kInvalidArgument, std::string(kWhat) + ": columns out of range");
  }
  std::int64_t rows = 0;
  for (const RowRange& r : ranges) {
    if (r.begin < 0 || r.count < 0 || r.begin > t.size(0) - r.count) {
      throw Error(ErrorKind::kInvalidArgument,
                  std::string(kWhat) + ": rows out of range of " + t.describe());
    }
    rows = checked_add(rows, r.count, kWhat);
  }
  TensorStorage out(matrix ? Dims{rows, columns.count} : Dims{rows}, t.dtype());
  const std::int64_t element = t.element_size();
  const std::int64_t row_bytes = checked_bytes(columns.count, element, kWhat);
  const auto* source = static_cast<const unsigned char*>(t.data());
  auto* target = static_cast<unsigned char*>(out.data());
  // Byte copies: the source may be a mapped file's tensor at any alignment.
  for (const RowRange& r : ranges) {
    for (std::int64_t i = r.begin; i < r.begin + r.count; ++i) {
      const std::int64_t at = (i * t.stride(0) + (matrix ? columns.begin * t.stride(1) : 0));
      if (!matrix || t.stride(1) == 1) {
        std::memcpy(target, source + at * element, static_cast<std::size_t>(row_bytes));
      } else {
        for (std::int64_t j = 0; j < columns.count; ++j) {
          std::memcpy(target + j * element, source + (at + j * t.stride(1)) * element,
                      static_cast<std::size_t>(element));
        }
      }
      target += row_bytes;
    }
  }
  return out;
}

}  // namespace tileops::llama
